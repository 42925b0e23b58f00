/**
 * The sm121 Pulumi program, loaded by ./index once the dynamic provider host is on its way: load the
 * project (the site from this stack's configuration, the recipes, their renders) and the run's
 * inputs, look at every node once (read-only), plan (src/plan: pure), register the plan (the Site
 * component), and return one stack output per deployment. Nothing runs on import.
 */
// The SDK's modules, not its index: the index loads the Automation API (half a second before the
// first resource registers, for nothing this program uses).
import { Config } from "@pulumi/pulumi/config";
import * as log from "@pulumi/pulumi/log";
import { getStack } from "@pulumi/pulumi/metadata";
import { allConfig } from "@pulumi/pulumi/runtime/config";
import { refusal } from "./components/refusal";
import { Site } from "./components/site";
import { planSite } from "./plan/site";
import { loadProject } from "./project";
import { refusing, runInputs } from "./programInputs";
import { programLogin } from "./programLogin";
import { lookSite } from "./programLook";
import { dynamicHost as provider } from "./providers/host";
import { Dialer } from "./remote";

export async function main(): Promise<Record<string, unknown>> {
  const stack = getStack();
  // The project directory (where Pulumi.yaml is), as the language host passes it; the working
  // directory is the program's, which may be a compiled output directory.
  const root = process.env["PULUMI_NODEJS_ROOT_DIRECTORY"] ?? process.cwd();
  const config = new Config("sm121");
  // The site comes from the configuration Pulumi resolved for this run (what Config reads: the
  // stack file, Pulumi.yaml's project config, ESC environments, --config-file).
  const project = refusing(() => loadProject(root, stack, allConfig()));
  const { run, secrets } = await runInputs(project, stack, config);
  // One connection per node for every look of this run, closed once they have all answered. A
  // preview records no host key; each key a run meets is shown.
  const login = programLogin(project.site, stack, config);
  const auth = { ...(await login.lookAuth()), recordHostKeys: !run.dryRun, onHostKey: (m: string) => void log.info(m) };
  const dial = new Dialer(auth);
  const seen = await lookSite(project, run, dial, refusal).finally(() => dial.close());
  const planned = planSite(project, seen, run);
  for (const l of planned.lines) void (l.level === "warn" ? log.warn(l.text) : log.info(l.text));
  if ("refused" in planned) throw refusal(planned.refused);
  const { plan } = planned;
  const site = new Site(stack, plan, { connection: login.connection(dial.usedKeyFiles()), secrets, provider });
  const outputs = site.stackOutputs(plan.served);
  if (plan.unknown.length === 0) return outputs;
  // A preview says what it leaves as it is and passes, so that `pulumi up` goes on to serve the
  // rest; the up fails for them once every other deployment has gone on.
  if (run.dryRun) {
    for (const u of plan.unknown) void log.warn(u);
    return outputs;
  }
  await site.registered;
  throw refusal(plan.unknown.join("\n"));
}
