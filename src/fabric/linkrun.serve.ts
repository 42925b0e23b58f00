/**
 * The link test of a deployment (./linktest.render.ts renders its scripts): nccl-tests'
 * all_reduce_perf under mpirun where the image has them (./linkmpi.serve), else sm121's torch script,
 * every rank at once on its node over one connection each; then what NCCL printed, judged (./nccl.render).
 * Used by `sm121 doctor --fabric` and, with sm121:fabricCheck, by `pulumi up` before a start.
 */
import type { Host } from "../remote";
import type { LinkTestPlan, NodeBundle } from "../render/types";
import { msg, say as said, t } from "../text/messages";
import { cells } from "../text/width";
import { chooseTool, exitText, runMpi, type LinkTool } from "./linkmpi.serve";
import {
  judgeLinkTest,
  largestRow,
  parseLinkTest,
  sizeText,
  type LinkFailure,
  type LinkTestOutput,
} from "./nccl.render";

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
    first === undefined
      ? { kind: "torch", why: msg("link.whyNoNodes") }
      : await chooseTool(b.deploy, plan.mpi, hostOf(first));
  say(t("link.with", { deployment: b.deployment, tool: toolName(tool), why: said(tool.why) }));
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
export function toolName(tool: LinkTool): string {
  return tool.kind === "all_reduce_perf" ? t("link.toolMpi", { path: tool.path }) : t("link.toolTorch");
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
      const done = { node: nb.node, rank: nb.rank, code: exitText(res.code) };
      say(t(res.code === 0 ? "link.rankDone" : "link.rankExited", done));
      return { node: nb.node, rank: nb.rank, code: res.code, output: `${res.stdout}${res.stderr}` };
    }),
  );
}

const gb = (v: number) => `${v.toFixed(2)} GB/s`;

/** Why it failed, with the numbers and the fix. */
export function failureText(f: LinkFailure, r: LinkTestReport): string {
  switch (f.kind) {
    case "no-result":
      return t("link.noResult");
    case "wrong":
      return t("link.wrong", { size: sizeText(f.bytes), wrong: f.wrong.join(" / ") });
    case "no-transport":
      return t("link.noTransport");
    case "socket-on-rdma":
      return t("link.socketOnRdma", { name: f.transport.name, nodes: r.nodes.join(", ") });
    case "below-minimum":
      return t("link.belowMinimum", { busbw: gb(f.busbw), size: sizeText(f.bytes), minimum: f.minimum });
  }
}

/** Rows right-aligned in columns three cells apart, each as wide as its widest cell and at least `least`. */
function rightAligned(rows: readonly string[][], least: readonly number[]): string[] {
  const widths = least.map((w, i) => Math.max(w, ...rows.map((r) => cells(r[i] ?? ""))));
  return rows.map((r) => `  ${r.map((c, i) => " ".repeat(Math.max(0, (widths[i] ?? 0) - cells(c))) + c).join("   ")}`);
}

/** The report an operator reads: transport, busbw per size, and the verdict with its numbers. */
export function linkTestText(r: LinkTestReport): string[] {
  const tr = r.output.transport;
  const ports = r.output.devices.length > 0 ? ` (${r.output.devices.join(" ")})` : "";
  const labels = { tool: t("link.labelTool"), transport: t("link.labelTransport"), avg: t("link.labelAvg") };
  // The labels' column: as wide as the widest label in this language, at least the English 12 cells.
  const width = Math.max(12, ...Object.values(labels).map((l) => cells(l) + 2));
  const label = (l: string) => `  ${l}${" ".repeat(width - cells(l))}`;
  const lines = [t("link.title", { deployment: r.deployment, nodes: r.nodes.join(", "), count: r.nodes.length })];
  lines.push(`${label(labels.tool)}${toolName(r.tool)}: ${said(r.tool.why)}`);
  const net = tr === undefined ? t("link.unknown") : `NET/${tr.name}`;
  lines.push(`${label(labels.transport)}${net}${ports}${r.rdma ? t("link.declaredRdma") : ""}`);
  const head = [t("link.colSize"), t("link.colBusbw"), t("link.colInPlace")];
  const rows = r.output.rows.map((row) => [sizeText(row.bytes), row.busbw.toFixed(2), row.busbwInPlace.toFixed(2)]);
  // nccl-tests' own widths (10, 12, 8) stay the least, so that the English table reads as before.
  lines.push(...rightAligned([head, ...rows], [10, 12, 8]));
  if (r.output.avgBusBandwidth !== undefined)
    lines.push(`${label(labels.avg)}${t("link.avgFrom", { busbw: gb(r.output.avgBusBandwidth) })}`);
  const last = largestRow(r.output);
  const min = r.minimum === undefined ? "" : t("link.minimum", { minimum: r.minimum });
  const at = last === undefined ? undefined : { busbw: gb(last.busbw), size: sizeText(last.bytes), min };
  if (r.ok && at !== undefined) lines.push(`  ${t("link.ok", { name: tr?.name ?? "?", ...at })}`);
  else {
    lines.push(`  ${at === undefined ? t("link.failed") : t("link.failedAt", at)}`);
    for (const f of r.failures) lines.push(`  - ${failureText(f, r)}`);
    for (const k of r.failedRanks) {
      const who = { node: k.node, rank: k.rank, code: exitText(k.code) };
      lines.push(`  - ${t(r.tool.kind === "all_reduce_perf" ? "link.mpirunFailed" : "link.rankFailed", who)}`);
      // mpirun's output holds every rank's and its own account of the failure: more of it.
      const tail = r.tool.kind === "all_reduce_perf" ? -15 : -5;
      for (const l of k.output.trimEnd().split("\n").slice(tail)) lines.push(`      ${l}`);
    }
  }
  return lines;
}
