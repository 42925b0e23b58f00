/**
 * A site with several deployments (docker vLLM solo x2, vLLM tp2, SGLang in tmux tp2, gr8 tp4
 * with its hooks, a LiteLLM gateway file): the first up, then the operations an operator runs
 * all day against it, a no-change `pulumi up` and a `pulumi preview` in rounds interleaved with
 * the empty program and the naive one-dynamic-resource program (ratios per round), with their SSH
 * connections and channels per node, and one profiled no-change up.
 */
import type { Floor } from "./floor";
import { measureProgramCost, type CostRow } from "./programcost";
import { benchProject, type BenchProject } from "./lib/project";
import { deploymentsYaml, type DeploymentLine } from "./lib/recipes";
import { counted, type NodeCount } from "../test/site/sessions";
import { moments, PROFILE_FLAGS, timeline, type TimelineRow } from "./lib/timeline";
import { median, medianRatio, ok, say, summary } from "./lib/util";

export const SITE_NODES = ["b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9", "b10"];

export const SITE_DEPLOYMENTS: DeploymentLine[] = [
  { name: "solo-a", recipe: "bench-solo", nodes: ["b1"] },
  { name: "solo-b", recipe: "bench-solo", nodes: ["b2"] },
  { recipe: "qwen3-32b-vllm-tp2", nodes: ["b3", "b4"] },
  { recipe: "qwen3-30b-sglang-tmux", nodes: ["b5", "b6"] },
  { recipe: "glm53-full-tp4-gr8", nodes: ["b7", "b8", "b9", "b10"] },
];

/**
 * An up that the program refuses after the look, where its other refusals stand (a takeover, a
 * protected node, the memory fit): an SM121_ROLL value it does not know. Nothing on a node changes.
 */
const REFUSED_ENV = { SM121_ROLL: "bench-refused" };

async function refusedUp(p: BenchProject): Promise<number> {
  const r = await p.up([], REFUSED_ENV);
  if (r.code === 0 || !/SM121_ROLL=bench-refused/.test(r.stdout + r.stderr))
    throw new Error(`site: the up with SM121_ROLL=bench-refused was not refused: ${summary(r)}`);
  return r.ms;
}

export interface SiteOp {
  op: string;
  ms: number[];
  medianMs: number;
  pulumi: string;
  /** per node, of the first run */
  counts: NodeCount[];
  /** whether every run had the same counts */
  stable: boolean;
  /** the floor sample taken right before each run (the machine is shared: pairs see the same load) */
  floorMs?: number[];
  /** median of run / its floor sample */
  pairedRatio?: number;
}

export interface SiteResult {
  deployments: number;
  /** How the simulated nodes got their CPU (bench/lib/nodecpu.ts). */
  nodeCpu: string;
  nodes: number;
  resources: string;
  firstUp: SiteOp;
  noChangeUp: SiteOp;
  preview: SiteOp;
  /** per interleaved round: the naive one-dynamic-resource program's no-change up, then the site's up and preview */
  rounds: Array<{
    floorMs: number;
    dynamicMs: number;
    upMs: number;
    previewMs: number;
    upSharedMs: number;
    /** An up refused at plan time (REFUSED_ENV). */
    refusedMs: number;
  }>;
  /** medians of the per-round ratios */
  upPerDynamic: number;
  /** the same with the nodes out of their CPU group (bench/lib/nodecpu.ts): for reference */
  upSharedPerDynamic: number;
  previewPerUp: number;
  refresh: SiteOp;
  destroy: SiteOp;
  profileNoChange: TimelineRow[];
  programCost: CostRow[];
}

const key = (cs: NodeCount[]) => JSON.stringify(cs.map((c) => [c.node, c.accepted, c.connections, c.channels]));

async function repeatOp(
  p: BenchProject,
  name: string,
  runs: number,
  f: () => ReturnType<BenchProject["up"]>,
): Promise<SiteOp> {
  const ms: number[] = [];
  const all: NodeCount[][] = [];
  let pulumi = "";
  for (let i = 0; i < runs; i++) {
    const r = await counted(p.e.site, SITE_NODES, f);
    ok(`site: ${name}`, r.value);
    ms.push(r.value.ms);
    all.push(r.counts);
    pulumi = summary(r.value);
  }
  const first = all[0] ?? [];
  return { op: name, ms, medianMs: median(ms), pulumi, counts: first, stable: all.every((c) => key(c) === key(first)) };
}

export async function measureSite(runs: number, floor: Floor): Promise<SiteResult> {
  say(`site: starting ${SITE_NODES.length} nodes (127.0.0.100-109:2300)`);
  const p = await benchProject({
    name: "benchsite",
    nodes: SITE_NODES,
    firstIp: 100,
    sshPort: 2300,
    deployments: deploymentsYaml(SITE_DEPLOYMENTS, "b1"),
    homeDirs: ["gr8-cache"],
  });
  try {
    say("site: first up (every deployment created)");
    const firstUp = await repeatOp(p, "first up (create all)", 1, () => p.up());
    // Interleaved rounds (the machine is shared: a round's samples see the same load): the empty
    // program, the naive one-dynamic-resource program, the site's no-change up, its preview.
    const ups: SiteOp[] = [];
    const previews: SiteOp[] = [];
    const rounds: SiteResult["rounds"] = [];
    for (let i = 0; i < runs; i++) {
      say(
        `site: round ${i + 1}/${runs} (floor, one dynamic resource, ` +
          "no-change up and preview (taking turns first), no-change up with the nodes out of their CPU group)",
      );
      const floorMs = await floor.up();
      const dynamicMs = await floor.dynamicUp();
      // The up and the preview take turns going first: the second inherits what the first leaves
      // behind (its processes' exits, the state file's writeback).
      const previewFirst = i % 2 === 1;
      const early = previewFirst ? await repeatOp(p, "preview", 1, () => p.preview()) : undefined;
      const up = await repeatOp(p, "no-change up", 1, () => p.up());
      if (!/unchanged/.test(up.pulumi) || /updated|created|deleted/.test(up.pulumi))
        throw new Error(`site: the no-change up changed something: ${up.pulumi}`);
      const pv = early ?? (await repeatOp(p, "preview", 1, () => p.preview()));
      p.nodes.place(false);
      const up0 = ok("site: no-change up, nodes out of their CPU group", await p.up());
      p.nodes.place(true);
      const refusedMs = await refusedUp(p);
      ups.push(up);
      previews.push(pv);
      rounds.push({
        floorMs,
        dynamicMs,
        upMs: up.medianMs,
        previewMs: pv.medianMs,
        upSharedMs: up0.ms,
        refusedMs,
      });
    }
    const merged = (name: string, ops: SiteOp[], ms: number[]): SiteOp => {
      const floors = rounds.map((r) => r.floorMs);
      const first = ops[0];
      return {
        op: name,
        ms,
        medianMs: median(ms),
        pulumi: first?.pulumi ?? "",
        counts: first?.counts ?? [],
        stable: ops.every((o) => key(o.counts) === key(first?.counts ?? [])),
        floorMs: floors,
        pairedRatio: medianRatio(ms, floors),
      };
    };
    const noChangeUp = merged(
      "no-change up",
      ups,
      rounds.map((r) => r.upMs),
    );
    const preview = merged(
      "preview",
      previews,
      rounds.map((r) => r.previewMs),
    );
    const upPerDynamic = medianRatio(
      rounds.map((r) => r.upMs),
      rounds.map((r) => r.dynamicMs),
    );
    const previewPerUp = medianRatio(
      rounds.map((r) => r.previewMs),
      rounds.map((r) => r.upMs),
    );
    const upSharedPerDynamic = medianRatio(
      rounds.map((r) => r.upSharedMs),
      rounds.map((r) => r.dynamicMs),
    );
    say("site: profiled no-change up");
    const t0 = Date.now();
    const prof = ok("site: profiled no-change up", await p.up(PROFILE_FLAGS));
    const profileNoChange = timeline(t0, moments(prof.stderr), { "pulumi exited": t0 + prof.ms });
    const programCost = measureProgramCost(p.e.dir, p.e.stack, runs);
    say("site: refresh");
    const refresh = await repeatOp(p, "refresh (read all)", 1, () => p.refresh());
    say("site: destroy");
    const destroy = await repeatOp(p, "destroy (delete all)", 1, () => p.destroy());
    return {
      deployments: SITE_DEPLOYMENTS.length,
      nodeCpu: p.nodes.how,
      nodes: SITE_NODES.length,
      resources: firstUp.pulumi,
      firstUp,
      noChangeUp,
      preview,
      rounds,
      upPerDynamic,
      upSharedPerDynamic,
      previewPerUp,
      refresh,
      destroy,
      profileNoChange,
      programCost,
    };
  } finally {
    await p.stop();
  }
}
