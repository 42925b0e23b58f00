/**
 * The link test of a deployment (render/linktest.ts renders its scripts): nccl-tests'
 * all_reduce_perf under mpirun where the image has them (./linkmpi), else sm121's torch script,
 * every rank at once on its node over one connection each; then what NCCL printed, judged (./linktest).
 * Used by `sm121 doctor --fabric` and, with sm121:fabricCheck, by `pulumi up` before a start.
 */
import type { Host } from "../remote";
import type { LinkTestPlan, NodeBundle } from "../render/types";
import { chooseTool, runMpi, type LinkTool } from "./linkmpi";
import { judgeLinkTest, largestRow, parseLinkTest, sizeText, type LinkFailure, type LinkTestOutput } from "./linktest";

export interface RankRun {
  node: string;
  rank: number;
  code: number | null;
  output: string;
}

export interface LinkTestReport {
  deployment: string;
  nodes: string[];
  /** The program that ran, and why that one. */
  tool: LinkTool;
  /** Whether every node of the deployment declares RDMA (then Socket fails the test). */
  rdma: boolean;
  minimum?: number;
  ranks: RankRun[];
  output: LinkTestOutput;
  failures: LinkFailure[];
  /** Ranks that exited with an error (a missing peer, a crash): their last lines. */
  failedRanks: RankRun[];
  ok: boolean;
}

/** Runs every rank at once (they meet each other) and judges what rank 0 and NCCL printed. */
export async function runLinkTest(
  b: { deployment: string; deploy: string; nodes: readonly NodeBundle[] },
  plan: LinkTestPlan,
  hostOf: (nb: NodeBundle) => Host,
  say: (line: string) => void = () => undefined,
): Promise<LinkTestReport> {
  const first = b.nodes[0];
  const tool: LinkTool =
    first === undefined ? { kind: "torch", why: "no nodes" } : await chooseTool(b.deploy, plan.mpi, hostOf(first));
  say(`${b.deployment}: link test with ${toolName(tool)}: ${tool.why}`);
  const ranks =
    tool.kind === "all_reduce_perf" && plan.mpi !== undefined
      ? await runMpi(b, plan.mpi, tool.path, plan.timeoutS, hostOf, say)
      : await torchRanks(b, plan, hostOf, say);
  const output = parseLinkTest(ranks.map((r) => r.output).join("\n"));
  const minimum = plan.minBusBandwidthGBps;
  const failures = judgeLinkTest(output, {
    rdma: plan.rdma,
    ...(minimum !== undefined && { minBusBandwidthGBps: minimum }),
  });
  const failedRanks = ranks.filter((r) => r.code !== 0);
  return {
    deployment: b.deployment,
    nodes: b.nodes.map((n) => n.node),
    tool,
    rdma: plan.rdma,
    ...(minimum !== undefined && { minimum }),
    ranks,
    output,
    failures,
    failedRanks,
    ok: failures.length === 0 && failedRanks.length === 0,
  };
}

/** How the report names the program. */
export function toolName(t: LinkTool): string {
  return t.kind === "all_reduce_perf"
    ? `nccl-tests' all_reduce_perf under mpirun (${t.path})`
    : "sm121's torch all-reduce script";
}

/** sm121's torch script: one rank a node, all at once. */
async function torchRanks(
  b: { nodes: readonly NodeBundle[] },
  plan: LinkTestPlan,
  hostOf: (nb: NodeBundle) => Host,
  say: (line: string) => void,
): Promise<RankRun[]> {
  return Promise.all(
    b.nodes.map(async (nb, i): Promise<RankRun> => {
      const script = plan.scripts[i] ?? "exit 1";
      const res = await hostOf(nb).run(script, {
        step: "link test",
        allowFailure: true,
        timeoutMs: (plan.timeoutS + 120) * 1000,
      });
      say(`${nb.node}: link test rank ${nb.rank} ${res.code === 0 ? "done" : `exited ${res.code ?? "(timed out)"}`}`);
      return { node: nb.node, rank: nb.rank, code: res.code, output: `${res.stdout}${res.stderr}` };
    }),
  );
}

const gb = (v: number) => `${v.toFixed(2)} GB/s`;

/** Why it failed, with the numbers and the fix. */
export function failureText(f: LinkFailure, r: LinkTestReport): string {
  switch (f.kind) {
    case "no-result":
      return "the all-reduce printed no result table (see the ranks' last lines)";
    case "wrong":
      return (
        `wrong results at ${sizeText(f.bytes)}: #wrong ${f.wrong.join(" / ")}; the link corrupts data: ` +
        "check the cables and the NICs' error counters (ethtool -S)"
      );
    case "no-transport":
      return "NCCL named no network (no NCCL INFO line): the image's NCCL did not read NCCL_DEBUG=INFO";
    case "socket-on-rdma":
      return (
        `NCCL chose NET/${f.transport.name} on a fabric declared RDMA (${r.nodes.join(", ")}): ` +
        "the ranks reach no RDMA device. Fix: check /dev/infiniband and the HCA on each node (rdma link, " +
        "ibdev2netdev), the --device and --cap-add IPC_LOCK flags `sm121 render` shows, " +
        "and NCCL_IB_HCA / NCCL_IB_DISABLE in the recipe's env"
      );
    case "below-minimum":
      return (
        `bus bandwidth ${gb(f.busbw)} at ${sizeText(f.bytes)} ` +
        `is under sm121:fabric.minBusBandwidthGBps ${f.minimum}. ` +
        "Fix: name both RoCE ports of the cable in the nodes' fabric.rdma, set MTU 9000 on the fabric interface, " +
        "or lower the minimum"
      );
  }
}

/** The report an operator reads: transport, busbw per size, and the verdict with its numbers. */
export function linkTestText(r: LinkTestReport): string[] {
  const t = r.output.transport;
  const ports = r.output.devices.length > 0 ? ` (${r.output.devices.join(" ")})` : "";
  const lines = [`link test of ${r.deployment} on ${r.nodes.join(", ")}: NCCL all-reduce, ${r.nodes.length} ranks`];
  lines.push(`  tool        ${toolName(r.tool)}: ${r.tool.why}`);
  lines.push(
    `  transport   ${t === undefined ? "unknown" : `NET/${t.name}`}${ports}${r.rdma ? ", fabric declared RDMA" : ""}`,
  );
  lines.push("        size   busbw (GB/s)   in-place");
  for (const row of r.output.rows) {
    const [size, out, inPlace] = [sizeText(row.bytes), row.busbw.toFixed(2), row.busbwInPlace.toFixed(2)];
    lines.push(`  ${size.padStart(10)}   ${out.padStart(12)}   ${inPlace.padStart(8)}`);
  }
  if (r.output.avgBusBandwidth !== undefined)
    lines.push(`  avg busbw   ${gb(r.output.avgBusBandwidth)} (nccl-tests' "# Avg bus bandwidth")`);
  const last = largestRow(r.output);
  const min = r.minimum === undefined ? "" : `, minimum ${r.minimum} GB/s`;
  if (r.ok && last !== undefined)
    lines.push(`  ok: NET/${t?.name ?? "?"}, busbw ${gb(last.busbw)} at ${sizeText(last.bytes)}${min}`);
  else {
    lines.push(`  FAILED${last === undefined ? "" : ` (busbw ${gb(last.busbw)} at ${sizeText(last.bytes)}${min})`}:`);
    for (const f of r.failures) lines.push(`  - ${failureText(f, r)}`);
    for (const k of r.failedRanks) {
      const who = r.tool.kind === "all_reduce_perf" ? `mpirun on ${k.node}` : `${k.node} (rank ${k.rank})`;
      lines.push(`  - ${who} exited ${k.code ?? "(timed out)"}; its last lines:`);
      // mpirun's output holds every rank's and its own account of the failure: more of it.
      const tail = r.tool.kind === "all_reduce_perf" ? -15 : -5;
      for (const l of k.output.trimEnd().split("\n").slice(tail)) lines.push(`      ${l}`);
    }
  }
  return lines;
}
