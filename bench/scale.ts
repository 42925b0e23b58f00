/**
 * How the no-change `pulumi up` grows with the site: 5 and 40 one-node deployments (docker vLLM
 * solo), both sites up at once and measured in interleaved rounds, so that each pair sees the
 * same load. What grows with the site is the per-resource work (registration, Check, Diff) and
 * the plan-time look at each node; the fixed cost (CLI, program, provider host) does not. Each
 * round also times the naive program of the same shape at 5 and 40 (floor.ts naiveSite): the
 * part of the growth that is Pulumi's own.
 */
import { rmSync } from "node:fs";
import type { PulumiEnv } from "../test/helpers/pulumi";
import { naiveSite, project } from "./floor";
import { benchProject, type BenchProject } from "./lib/project";
import { deploymentsYaml } from "./lib/recipes";
import { median, medianRatio, ok, reapedCpuMs, round, say, summary, timed } from "./lib/util";

export interface ScaleResult {
  small: number;
  large: number;
  smallMs: number[];
  largeMs: number[];
  /** median of the per-round ratios large / small */
  ratio: number;
  largeSummary: string;
  /** The naive program shaped like the sites (a component and a no-op dynamic resource per deployment). */
  naiveSmallMs: number[];
  naiveLargeMs: number[];
  naiveRatio: number;
  /**
   * sm121's cost per extra deployment over the naive program's, measured in the same rounds: the
   * median of the per-round ((large - small) / (LARGE - SMALL)) of sm121 over that of the naive.
   */
  perExtraRatio: number;
  perExtraMs: number;
  naivePerExtraMs: number;
  /**
   * The same growth in CPU time, per extra deployment (medians of the rounds): the operator's
   * processes (pulumi and what it ran: the program, the provider hosts; util.reapedCpuMs), the
   * naive program's, and the simulated nodes' (their CPU group; null where it cannot be read).
   * On a cluster the nodes' share runs on the nodes, in parallel; here it shares the two cores.
   */
  perExtraCpu: { operatorMs: number; naiveOperatorMs: number; nodesMs: number | null };
}

const SMALL = 5;
const LARGE = 40;

function soloSite(prefix: string, n: number, firstIp: number, sshPort: number): Promise<BenchProject> {
  const nodes = Array.from({ length: n }, (_, i) => `${prefix}${i + 1}`);
  return benchProject({
    name: `bench${prefix}${n}`,
    nodes,
    firstIp,
    sshPort,
    deployments: deploymentsYaml(
      nodes.map((node) => ({ name: `${prefix}-${node}`, recipe: "bench-solo", nodes: [node] })),
    ),
  });
}

export async function measureScale(runs: number): Promise<ScaleResult> {
  say(`scale: the naive program at ${SMALL} and ${LARGE} deployments`);
  const base = `/tmp/sm121-bench-scale-${process.pid}`;
  rmSync(base, { recursive: true, force: true });
  const naive = {
    small: await project(base, "benchnaive5", naiveSite(SMALL)),
    large: await project(base, "benchnaive40", naiveSite(LARGE)),
  };
  const cpu = { small: [] as number[], large: [] as number[], naiveSmall: [] as number[], naiveLarge: [] as number[] };
  const nodesCpu = { small: [] as number[], large: [] as number[] };
  /** Runs one up, adding the CPU its processes (and, for a site, its nodes) used to the round's lists. */
  async function counted<T>(into: number[], run: () => Promise<T>, nodes?: { p: BenchProject; into: number[] }) {
    const c0 = reapedCpuMs();
    const n0 = nodes?.p.nodes.usedMs();
    const value = await run();
    into.push(reapedCpuMs() - c0);
    const n1 = nodes?.p.nodes.usedMs();
    if (nodes !== undefined && n0 !== undefined && n1 !== undefined) nodes.into.push(n1 - n0);
    return value;
  }
  const naiveUp = async (p: PulumiEnv, n: number, into: number[]) =>
    (
      await counted(into, () =>
        timed(`scale: naive no-change up (${n})`, () => p.run(["up", "--yes", "--skip-preview"])),
      )
    ).ms;
  say(`scale: starting ${SMALL} + ${LARGE} nodes (127.0.0.100-${100 + SMALL + LARGE - 1}, ports 2301/2302)`);
  const small = await soloSite("m", SMALL, 100, 2301);
  try {
    const large = await soloSite("z", LARGE, 100 + SMALL, 2302);
    try {
      say(`scale: first up of ${SMALL} and of ${LARGE} deployments`);
      ok("scale: first up (5)", await small.up());
      const first = ok(`scale: first up (${LARGE})`, await large.up());
      if (!/created/.test(summary(first))) throw new Error(`scale: the first up created nothing: ${summary(first)}`);
      const r = {
        smallMs: [] as number[],
        largeMs: [] as number[],
        naiveSmallMs: [] as number[],
        naiveLargeMs: [] as number[],
      };
      let largeSummary = "";
      for (let i = 0; i < runs; i++) {
        say(`scale: round ${i + 1}/${runs}`);
        const sm = await counted(cpu.small, () => small.up(), { p: small, into: nodesCpu.small });
        r.smallMs.push(ok("scale: no-change up (5)", sm).ms);
        const l = ok(
          `scale: no-change up (${LARGE})`,
          await counted(cpu.large, () => large.up(), { p: large, into: nodesCpu.large }),
        );
        largeSummary = summary(l);
        if (/updated|created|deleted/.test(largeSummary))
          throw new Error(`scale: the no-change up changed something: ${largeSummary}`);
        r.largeMs.push(l.ms);
        r.naiveSmallMs.push(await naiveUp(naive.small, SMALL, cpu.naiveSmall));
        r.naiveLargeMs.push(await naiveUp(naive.large, LARGE, cpu.naiveLarge));
      }
      ok(`scale: destroy (${LARGE})`, await large.destroy());
      ok("scale: destroy (5)", await small.destroy());
      const extra = (large: number[], small: number[]) =>
        large.map((x, i) => (x - (small[i] ?? Number.NaN)) / (LARGE - SMALL));
      const perExtra = extra(r.largeMs, r.smallMs);
      const naivePerExtra = extra(r.naiveLargeMs, r.naiveSmallMs);
      return {
        small: SMALL,
        large: LARGE,
        ...r,
        ratio: medianRatio(r.largeMs, r.smallMs),
        largeSummary,
        naiveRatio: medianRatio(r.naiveLargeMs, r.naiveSmallMs),
        perExtraRatio: medianRatio(perExtra, naivePerExtra),
        perExtraMs: round(median(perExtra), 1),
        naivePerExtraMs: round(median(naivePerExtra), 1),
        perExtraCpu: {
          operatorMs: round(median(extra(cpu.large, cpu.small)), 1),
          naiveOperatorMs: round(median(extra(cpu.naiveLarge, cpu.naiveSmall)), 1),
          nodesMs:
            Math.min(nodesCpu.large.length, nodesCpu.small.length) < runs
              ? null
              : round(median(extra(nodesCpu.large, nodesCpu.small)), 1),
        },
      };
    } finally {
      await large.stop();
    }
  } finally {
    await small.stop();
    rmSync(base, { recursive: true, force: true });
  }
}
