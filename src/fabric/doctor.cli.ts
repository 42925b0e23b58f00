/**
 * `sm121 doctor --fabric <deployment>`: the link test (./linkrun.serve.ts) between the deployment's
 * nodes, in its own image and environment, after the fabric look of `pulumi up` (which resolves
 * `auto` fabrics and names what it would refuse). Prints the transport NCCL chose and the bus
 * bandwidth per size; exit 1 when the test fails (Socket on RDMA, a bandwidth under
 * sm121:fabric.minBusBandwidthGBps, a rank that fails), with the numbers.
 */
import { Dialer, withHosts } from "../remote";
import { linkTestPlan } from "./linktest.render";
import { fabricStep } from "./step.serve";
import type { z } from "zod";
import { failureText, linkTestText, runLinkTest, type LinkTestReport } from "./linkrun.serve";
import { say, t } from "../text/messages";
import { bool, type Parsed } from "../cli/args";
import { cliAuth, hostOf, selectedDeployment } from "../cli/connect";
import { contextProject, type CliContext } from "../cli/context";
import { jsonOut, linkTestSchema } from "../cli/schemas";

class Refused extends Error {}

function jsonReport(stack: string, r: LinkTestReport): z.infer<ReturnType<typeof linkTestSchema>> {
  const t = r.output.transport;
  return {
    stack,
    deployment: r.deployment,
    ok: r.ok,
    rdma: r.rdma,
    minBusBandwidthGBps: r.minimum ?? null,
    tool: { kind: r.tool.kind, path: r.tool.kind === "all_reduce_perf" ? r.tool.path : null, why: say(r.tool.why) },
    avgBusBandwidthGBps: r.output.avgBusBandwidth ?? null,
    transport: t === undefined ? null : { kind: t.kind, name: t.name },
    devices: r.output.devices,
    rows: r.output.rows.map((x) => ({ bytes: x.bytes, busbw: x.busbw, busbwInPlace: x.busbwInPlace, algbw: x.algbw })),
    failures: r.failures.map((f) => ({ kind: f.kind, message: failureText(f, r) })),
    ranks: r.ranks.map((x) => ({ node: x.node, rank: x.rank, code: x.code })),
  };
}

export async function doctorFabric(ctx: CliContext, p: Parsed, name: string): Promise<number> {
  const project = contextProject(ctx);
  const { auth } = cliAuth(project.site, p, process.env, ctx.pulumi);
  const chosen = selectedDeployment(project.bundles, name, ctx.stack);
  let bundles = [chosen];
  const dial = new Dialer(auth);
  try {
    bundles = await fabricStep({
      site: project.site,
      recipes: project.recipes,
      root: ctx.root,
      bundles,
      dial,
      refuse: (m) => new Refused(m),
    });
  } catch (e) {
    if (!(e instanceof Refused)) throw e;
    // What `pulumi up` would refuse is said; the link test still runs, so the numbers show why.
    for (const l of e.message.split("\n")) ctx.out(l);
    ctx.out(t("fabric.wouldStop"));
  } finally {
    dial.close();
  }
  const b = bundles[0] ?? chosen;
  const plan = linkTestPlan(project.site, b);
  const report = await withHosts(b.nodes, auth, (hosts) => runLinkTest(b, plan, (nb) => hostOf(hosts, nb)));
  if (bool(p, "json")) ctx.out(jsonOut(linkTestSchema(), jsonReport(ctx.stack, report)));
  else for (const l of linkTestText(report)) ctx.out(l);
  return report.ok ? 0 : 1;
}
