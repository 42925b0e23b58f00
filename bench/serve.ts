/**
 * Serving one deployment from nothing: `pulumi up` after a destroy, its wall time, the engine's
 * own start time from the node's container log, and "launcher overhead = up - floor - engine
 * start". Also the SSH connections and channels of each resource operation (create, no-change
 * up, changed update, refresh, delete) and one profiled run per case: where the time goes.
 */
import type { SimNode } from "../test/site/site";
import { setEngineBehaviour } from "../test/site/site";
import type { PulumiRun } from "../test/helpers/pulumi";
import type { Floor } from "./floor";
import { deploymentEngine, type DeploymentEngine } from "./lib/nodelogs";
import type { BenchProject } from "./lib/project";
import { deploymentsYaml } from "./lib/recipes";
import { counted, type NodeCount } from "../test/site/sessions";
import { moments, PROFILE_FLAGS, timeline, type Moments, type TimelineRow } from "./lib/timeline";
import { median, ok, say, summary } from "./lib/util";

export interface ServeCase {
  label: string;
  deployment: string;
  recipe: string;
  nodes: string[];
}

export interface OpCount {
  op: string;
  pulumi: string;
  ms: number;
  counts: NodeCount[];
}

export interface ServeRun {
  /** the floor sample taken right before this up */
  floorMs: number;
  upMs: number;
  engineStartMs: number;
  /** ms from the engine's ready line to the first 200 of /v1/models */
  noticedAfterMs: number | null;
  /** ms from the engine's ready line to the end of `pulumi up` */
  readyToExitMs: number;
  overheadMs: number;
  destroyMs: number;
  /** CPU time of the nodes' side (each node's sshd and what it started, its Docker Engine, containers) during the up */
  nodeCpuMs: number | null;
}

export interface ServeResult {
  label: string;
  nodes: number;
  /** the deployment's nodes (the site has others: the plan-time look reaches them too) */
  nodeNames: string[];
  runs: ServeRun[];
  upMedianMs: number;
  engineStartMedianMs: number;
  overheadMedianMs: number;
  noticedMedianMs: number | null;
  destroyMedianMs: number;
  nodeCpuMedianMs: number | null;
  ops: OpCount[];
  profile: TimelineRow[];
}

function nodesOf(p: BenchProject, names: readonly string[]): SimNode[] {
  return names.map((n) => {
    const node = p.e.site.nodes.find((x) => x.name === n);
    if (node === undefined) throw new Error(`no node ${n}`);
    return node;
  });
}

async function op(p: BenchProject, c: ServeCase, name: string, f: () => Promise<PulumiRun>): Promise<OpCount> {
  const r = await counted(p.e.site, c.nodes, f);
  ok(`${c.label}: ${name}`, r.value);
  return {
    op: name,
    pulumi: summary(r.value),
    ms: r.value.ms,
    counts: r.counts.filter((x) => c.nodes.includes(x.node) || x.channels > 0),
  };
}

/** One fresh up and its destroy; the engine's times read from the node in between. */
async function freshRun(
  p: BenchProject,
  c: ServeCase,
  floor: Floor,
  extra: () => Promise<OpCount[]>,
): Promise<{ run: ServeRun; create: OpCount; del: OpCount; more: OpCount[]; engine: DeploymentEngine }> {
  const floorMs = await floor.up();
  const t0 = Date.now();
  const cpu0 = p.nodes.usedMs();
  const create = await op(p, c, "create (fresh up)", () => p.up());
  const cpu1 = p.nodes.usedMs();
  const engine = deploymentEngine(nodesOf(p, c.nodes), c.deployment);
  const end = t0 + create.ms;
  const more = await extra();
  const del = await op(p, c, "delete (destroy)", () => p.destroy());
  const run: ServeRun = {
    floorMs,
    upMs: create.ms,
    engineStartMs: Math.round(engine.engineStartMs),
    noticedAfterMs: engine.noticedAfterMs === undefined ? null : Math.round(engine.noticedAfterMs),
    readyToExitMs: Math.round(end - engine.readyAt),
    overheadMs: Math.round(create.ms - floorMs - engine.engineStartMs),
    destroyMs: del.ms,
    nodeCpuMs: cpu0 === undefined || cpu1 === undefined ? null : Math.round(cpu1 - cpu0),
  };
  return { run, create, del, more, engine };
}

/** The profiled run: verbose Pulumi log + channel times + engine times on one time axis. */
async function profiled(p: BenchProject, c: ServeCase): Promise<TimelineRow[]> {
  const t0 = Date.now();
  const r = await counted(p.e.site, c.nodes, () => p.up(PROFILE_FLAGS));
  ok(`${c.label}: profiled up`, r.value);
  const engine = deploymentEngine(nodesOf(p, c.nodes), c.deployment);
  const rank0 = r.counts.find((x) => x.node === c.nodes[0]);
  const ch: Moments = {};
  (rank0?.channelTimes ?? []).forEach((t, i) => (ch[`rank 0 (${c.nodes[0] ?? ""}) channel ${i + 1} opened`] = t));
  const eng: Moments = { "first container started": engine.firstStart, "engine ready (log line)": engine.readyAt };
  if (engine.noticedAfterMs !== undefined)
    eng["first 200 of /v1/models (readiness noticed)"] = engine.readyAt + engine.noticedAfterMs;
  const rows = timeline(t0, moments(r.value.stderr), ch, eng, { "pulumi exited": t0 + r.value.ms });
  ok(`${c.label}: destroy after the profiled up`, await p.destroy());
  return rows;
}

export async function measureServe(p: BenchProject, c: ServeCase, floor: Floor, runs: number): Promise<ServeResult> {
  p.setDeployments(deploymentsYaml([{ name: c.deployment, recipe: c.recipe, nodes: c.nodes }]));
  ok(`${c.label}: destroy before`, await p.destroy());
  const out: ServeRun[] = [];
  const ops: OpCount[] = [];
  for (let i = 0; i < runs; i++) {
    say(`${c.label}: fresh up ${i + 1}/${runs}`);
    const first = i === 0;
    const r = await freshRun(p, c, floor, async () => {
      if (!first) return [];
      const again = await op(p, c, "no-change up", () => p.up());
      const refresh = await op(p, c, "refresh (read)", () => p.refresh());
      p.setRecipeRev(2);
      const update = await op(p, c, "update (changed bundle)", () => p.up());
      p.setRecipeRev(1);
      return [again, refresh, update];
    });
    out.push(r.run);
    if (first) ops.push(r.create, ...r.more, r.del);
  }
  say(`${c.label}: profiled up (-v=9 --logflow)`);
  const profile = await profiled(p, c);
  const noticed = out.map((r) => r.noticedAfterMs).filter((x): x is number => x !== null);
  const nodeCpu = out.map((r) => r.nodeCpuMs).filter((x): x is number => x !== null);
  return {
    label: c.label,
    nodes: c.nodes.length,
    nodeNames: c.nodes,
    runs: out,
    upMedianMs: median(out.map((r) => r.upMs)),
    engineStartMedianMs: median(out.map((r) => r.engineStartMs)),
    overheadMedianMs: median(out.map((r) => r.overheadMs)),
    noticedMedianMs: noticed.length === 0 ? null : median(noticed),
    destroyMedianMs: median(out.map((r) => r.destroyMs)),
    nodeCpuMedianMs: nodeCpu.length === 0 ? null : median(nodeCpu),
    ops,
    profile,
  };
}

export interface ReadinessResult {
  startDelayS: number;
  runs: ServeRun[];
  noticedMedianMs: number | null;
  noticedMaxMs: number | null;
  upMedianMs: number;
  /** median launcher overhead with the delay - the same without it: what a slow engine costs beyond its own time */
  slowStartPenaltyMs: number;
}

/** The engine starts slowly (startDelayS): how long after its ready line does sm121 notice? */
export async function measureReadiness(
  p: BenchProject,
  c: ServeCase,
  floor: Floor,
  runs: number,
  delayS: number,
  overheadWithoutDelayMs: number,
): Promise<ReadinessResult> {
  p.setDeployments(deploymentsYaml([{ name: c.deployment, recipe: c.recipe, nodes: c.nodes }]));
  const nodes = nodesOf(p, c.nodes);
  for (const n of nodes) setEngineBehaviour(n, { startDelayS: delayS });
  try {
    const out: ServeRun[] = [];
    for (let i = 0; i < runs; i++) {
      say(`readiness (startDelayS ${delayS}): fresh up ${i + 1}/${runs}`);
      out.push((await freshRun(p, c, floor, () => Promise.resolve([]))).run);
    }
    const noticed = out.map((r) => r.noticedAfterMs).filter((x): x is number => x !== null);
    const up = median(out.map((r) => r.upMs));
    return {
      startDelayS: delayS,
      runs: out,
      noticedMedianMs: noticed.length === 0 ? null : median(noticed),
      noticedMaxMs: noticed.length === 0 ? null : Math.max(...noticed),
      upMedianMs: up,
      slowStartPenaltyMs: Math.round(median(out.map((r) => r.overheadMs)) - overheadWithoutDelayMs),
    };
  } finally {
    for (const n of nodes) setEngineBehaviour(n, null);
  }
}
