/**
 * The memory fit of a deployment, per node: the model's weights (the safetensors index's
 * total_size in the node's HF cache, else the recipe's `[memory] weights_gb`) and the KV cache of
 * `max_model_len` x `max_num_seqs` tokens (config.json's shape and the engine's KV dtype), both as
 * the engine divides them over tensor and pipeline parallelism, plus the engine's own overhead,
 * against the share of the node's memory the engine may take (its utilization setting x MemTotal;
 * a GB10 has 128 GB of unified memory, shared with the OS).
 *
 * A node where weights, overhead and one sequence of max_model_len do not fit is refused: the
 * engine would not start (vLLM refuses a max_model_len its KV cache cannot hold) or run the node
 * out of memory. A node where max_num_seqs full sequences do not fit, or with less than a tenth
 * of its budget to spare, is tight: a warning. Pure: the nodes' facts come from the plan-time look
 * (or doctor), and render, which touches no node, takes a GB10's memory.
 */
import type { EngineName, Recipe } from "../recipe/types";
import { driverFor } from "../engines";
import { msg, say, t, type MessageKey, type Msg } from "../text/messages";
import { columns } from "../text/width";
import { knobsOf, type FitKnobs } from "./memknobs";
import { kvBytesPerToken, kvElementBytes, kvFormula, shapeOf, type ModelShape } from "./modelshape";
import type { DeploymentBundle } from "./types";

const GIB = 1024 ** 3;
/**
 * MemTotal of a DGX Spark (GB10, 128 GB LPDDR5x): 127,601,452 kB, the rest is the firmware's and
 * the GPU's carve-outs.
 */
export const GB10_MEM_TOTAL_BYTES = 127_601_452 * 1024;
/** Below this share of the budget to spare, a fit is tight. */
const TIGHT_MARGIN = 0.1;

/** What a look at a node found: its memory, and the model's files in its HF cache. */
export interface NodeModelFacts {
  memTotalBytes?: number;
  /** config.json of the checkpoint, parsed. */
  config?: Record<string, unknown>;
  /** The safetensors index's metadata.total_size (or the one model.safetensors file's size). */
  weightsBytes?: number;
  /** config.json and the size came from the hub, read through this node (no HF cache had them). */
  fromHub?: boolean;
}

export type FitVerdict = "fits" | "tight" | "refused" | "unknown";

export interface NodeFit {
  node: string;
  memoryGiB: number;
  /** "node" (its MemTotal) or "GB10" (render: no node was asked). */
  memoryFrom: "node" | "GB10";
  budgetGiB: number;
  weightsGiB?: number;
  /** KV cache of one max_model_len sequence, and of max_num_seqs of them. */
  kvOneGiB?: number;
  kvAllGiB?: number;
  overheadGiB: number;
  /** Weights + overhead (when inside the budget) + one full sequence. */
  needGiB?: number;
  /** Full sequences of max_model_len the rest of the budget holds. */
  sequences?: number;
  verdict: FitVerdict;
  /** Why, for tight, refused and unknown. */
  why?: Msg;
}

export interface Fit {
  deployment: string;
  model?: string;
  engine: EngineName;
  knobs: FitKnobs;
  /** Where the weights' size and the model's shape come from; undefined: unknown. */
  weightsFrom?: Msg;
  shapeFrom?: Msg;
  kvPerTokenBytes?: number;
  /** The weights' dtype (config.json torch_dtype), when known: what a quantized checkpoint would halve. */
  weightsDtype?: string;
  kvFormula: Msg;
  nodes: NodeFit[];
  verdict: FitVerdict;
}

const round = (x: number) => Math.round(x * 10) / 10;
export const gib = (x: number): string => `${round(x).toFixed(1)} GiB`;

function modelOf(b: DeploymentBundle, recipe: Recipe | undefined): string | undefined {
  return recipe?.model ?? b.nodes[0]?.envKeys?.["MODEL"];
}

/** The node whose HF cache answers first (rank order), with the facts it had. */
function firstWith<K extends keyof NodeModelFacts>(
  b: DeploymentBundle,
  seen: Readonly<Record<string, NodeModelFacts>>,
  key: K,
): { node: string; value: NonNullable<NodeModelFacts[K]> } | undefined {
  for (const nb of b.nodes) {
    const v = seen[nb.node]?.[key];
    if (v !== undefined && v !== null) return { node: nb.node, value: v };
  }
  return undefined;
}

const WORST: readonly FitVerdict[] = ["refused", "unknown", "tight", "fits"];

/** The fit of one deployment; `seen` by node name (empty for render). */
/**
 * The ranks (GPUs) of a deployment on each of its nodes: tp x pp spread over its nodes. A node
 * holds that many ranks' share of the weights and the KV cache: `tp = 2` on one node keeps the
 * whole model there, not half of it.
 */
export function ranksPerNode(knobs: Pick<FitKnobs, "tp" | "pp">, nodes: number): number {
  return Math.max(1, Math.ceil((knobs.tp * knobs.pp) / Math.max(1, nodes)));
}

export function fitOf(
  b: DeploymentBundle,
  recipe: Recipe | undefined,
  seen: Readonly<Record<string, NodeModelFacts>>,
): Fit {
  const knobs = knobsOf(b, recipe);
  const ranks = ranksPerNode(knobs, b.nodes.length);
  // A node's share of the weights: its ranks of tp x pp.
  const share = (knobs.tp * knobs.pp) / ranks;
  const cfg = firstWith(b, seen, "config");
  const shape: ModelShape = cfg !== undefined ? shapeOf(cfg.value) : shapeOf(recipe?.memory?.shape ?? {});
  // A node's HF cache, else the hub read through a node, else the recipe's [memory].
  const hub = (node: string) => seen[node]?.fromHub === true;
  const model = modelOf(b, recipe) ?? "";
  const shapeFrom =
    cfg !== undefined
      ? hub(cfg.node)
        ? msg("fit.fromHubConfig", { model, node: cfg.node })
        : msg("fit.fromConfig", { node: cfg.node })
      : recipe?.memory !== undefined && shape.layers !== undefined
        ? msg("fit.fromMemory", { file: recipe.file })
        : undefined;
  const w = firstWith(b, seen, "weightsBytes");
  const weightsBytes = w?.value ?? recipe?.memory?.weightsBytes;
  const weightsFrom =
    w !== undefined
      ? hub(w.node)
        ? msg("fit.fromHubIndex", { model, node: w.node })
        : msg("fit.fromIndex", { node: w.node })
      : weightsBytes !== undefined
        ? msg("fit.fromWeightsGb", { file: recipe?.file ?? b.recipeFile })
        : undefined;
  const maxLen = knobs.maxModelLen?.value ?? shape.maxPositions;
  if (knobs.maxModelLen === undefined && shape.maxPositions !== undefined)
    knobs.maxModelLen = {
      value: shape.maxPositions,
      from: msg("state.fit.maxPositions"),
      byDefault: true,
    };
  const element = kvElementBytes(knobs.kvDtype.value, shape.dtype);
  const perRank = element === undefined ? undefined : kvBytesPerToken(shape, element, knobs.tp, knobs.pp);
  const perToken = perRank === undefined ? undefined : perRank * ranks;
  const seqs = knobs.maxNumSeqs?.value ?? 1;
  const engine = driverFor(b.engine).memory;
  const overhead = recipe?.memory?.overheadGiB ?? engine.overheadGiB;
  const nodes = b.nodes.map((nb): NodeFit => {
    const mem = seen[nb.node]?.memTotalBytes;
    const memoryGiB = (mem ?? GB10_MEM_TOTAL_BYTES) / GIB;
    const budgetGiB = memoryGiB * knobs.util.value;
    const base = {
      node: nb.node,
      memoryGiB,
      memoryFrom: mem === undefined ? ("GB10" as const) : ("node" as const),
      budgetGiB,
      overheadGiB: overhead,
    };
    if (weightsBytes === undefined) {
      return { ...base, verdict: "unknown", why: msg("fit.whyNoWeights", { file: recipe?.file ?? b.recipeFile }) };
    }
    const weightsGiB = weightsBytes / share / GIB;
    const inBudget = engine.overheadInBudget ? overhead : 0;
    if (perToken === undefined || maxLen === undefined) {
      const need = weightsGiB + inBudget;
      const why = msg("fit.whyKvUnknown", { what: msg(perToken === undefined ? "fit.noShape" : "fit.noMaxLen") });
      const over = need > budgetGiB;
      const verdict = over ? "refused" : "unknown";
      return { ...base, weightsGiB, needGiB: need, verdict, why: over ? msg("fit.whyOverAlone", { why }) : why };
    }
    const kvOneGiB = (perToken * maxLen) / GIB;
    const kvAllGiB = kvOneGiB * seqs;
    const need = weightsGiB + inBudget + kvOneGiB;
    const room = budgetGiB - weightsGiB - inBudget;
    const sequences = Math.max(0, Math.floor(room / kvOneGiB));
    const out = { ...base, weightsGiB, kvOneGiB, kvAllGiB, needGiB: need, sequences };
    if (need > budgetGiB) {
      return { ...out, verdict: "refused", why: msg("fit.whyNeeds", { need: gib(need), budget: gib(budgetGiB) }) };
    }
    if (sequences < seqs) {
      const from = knobs.maxNumSeqs?.from ?? "max_num_seqs";
      return { ...out, verdict: "tight", why: msg("fit.whySequences", { sequences, count: seqs, len: maxLen, from }) };
    }
    const spare = budgetGiB - (weightsGiB + inBudget + kvAllGiB);
    if (spare < TIGHT_MARGIN * budgetGiB) {
      return { ...out, verdict: "tight", why: msg("fit.whySpare", { spare: gib(spare), budget: gib(budgetGiB) }) };
    }
    return { ...out, verdict: "fits" };
  });
  const verdict = WORST.find((v) => nodes.some((n) => n.verdict === v)) ?? "fits";
  return {
    deployment: b.deployment,
    ...(model !== "" && { model }),
    engine: b.engine,
    knobs,
    ...(weightsFrom !== undefined && { weightsFrom }),
    ...(shapeFrom !== undefined && { shapeFrom }),
    ...(perToken !== undefined && { kvPerTokenBytes: perToken }),
    ...(shape.dtype !== undefined && { weightsDtype: shape.dtype }),
    kvFormula:
      element === undefined
        ? msg("fit.kvDtypeUnknown", { dtype: knobs.kvDtype.value })
        : ranks > 1
          ? msg("fit.ranksOnNode", { formula: kvFormula(shape, element, knobs.tp, knobs.pp), count: ranks })
          : msg("fit.formula", { formula: kvFormula(shape, element, knobs.tp, knobs.pp) }),
    nodes,
    verdict,
  };
}

/** One line each for the deployment's inputs: what the numbers come from. */
export function fitHeader(fit: Fit): string[] {
  const k = fit.knobs;
  const len =
    k.maxModelLen === undefined
      ? t("fit.maxLenUnknown")
      : t("fit.maxLen", { value: k.maxModelLen.value, from: say(k.maxModelLen.from) });
  const seqs =
    k.maxNumSeqs === undefined
      ? t("fit.seqsUnset")
      : t("fit.seqs", { value: k.maxNumSeqs.value, from: say(k.maxNumSeqs.from) });
  const formula = say(fit.kvFormula);
  const kv =
    fit.kvPerTokenBytes === undefined
      ? fit.shapeFrom === undefined
        ? t("fit.kvUnknownShape")
        : t("fit.kvUnknown", { formula })
      : t("fit.kvPerToken", {
          kib: Math.round(fit.kvPerTokenBytes / 1024),
          formula,
          from: say(fit.shapeFrom ?? msg("fit.unknown")),
        });
  const model = fit.model ?? t("fit.noModel");
  const tp = `${k.tp}${k.pp > 1 ? ` x pp ${k.pp}` : ""}`;
  const weights = say(fit.weightsFrom ?? msg("fit.unknown"));
  const outside = driverFor(fit.engine).memory.overheadInBudget ? "" : t("fit.overheadOutside");
  return [
    t("fit.header", { deployment: fit.deployment, model, engine: fit.engine, tp, len, seqs }),
    `  ${t("fit.inputs", { weights, dtype: k.kvDtype.value, from: say(k.kvDtype.from), kv })}`,
    `  ${t("fit.budget", { util: k.util.value, from: say(k.util.from) })}${outside}`,
  ];
}

/** A node's row: the numbers, then the verdict. */
export function fitCells(n: NodeFit): {
  memory: string;
  budget: string;
  weights: string;
  kv: string;
  overhead: string;
  need: string;
  verdict: string;
} {
  const opt = (x: number | undefined) => (x === undefined ? "?" : gib(x));
  const kvAll = n.kvAllGiB !== undefined && n.kvAllGiB !== n.kvOneGiB ? n.kvAllGiB : undefined;
  const seq = n.sequences === undefined ? "" : ` (${t("fit.fullSeq", { count: n.sequences })})`;
  return {
    memory: `${gib(n.memoryGiB)}${n.memoryFrom === "GB10" ? " (GB10)" : ""}`,
    budget: gib(n.budgetGiB),
    weights: opt(n.weightsGiB),
    kv:
      n.kvOneGiB === undefined
        ? "?"
        : kvAll !== undefined
          ? t("fit.kvCell", { one: gib(n.kvOneGiB), all: gib(kvAll) })
          : gib(n.kvOneGiB),
    overhead: gib(n.overheadGiB),
    need: opt(n.needGiB),
    verdict: `${verdictText(n.verdict)}${seq}`,
  };
}

const VERDICTS = {
  fits: "fit.verdict.fits",
  tight: "fit.verdict.tight",
  refused: "fit.verdict.refused",
  unknown: "fit.verdict.unknown",
} as const satisfies Record<FitVerdict, MessageKey>;

/** A verdict in words. */
export function verdictText(v: FitVerdict): string {
  return t(VERDICTS[v]);
}

/** Why each node is tight, refused or unknown, under the table; one line when every node has the same reason. */
export function fitNotes(fit: Fit): string[] {
  const whys = fit.nodes.flatMap((n) => (n.why === undefined ? [] : [{ n, why: say(n.why) }]));
  const first = whys[0];
  if (first === undefined) return [];
  const same = whys.every((w) => w.why === first.why && w.n.verdict === first.n.verdict);
  if (whys.length === fit.nodes.length && same) return [`  ${verdictText(first.n.verdict)}: ${first.why}`];
  return whys.map((w) => `  ${w.n.node}: ${verdictText(w.n.verdict)}: ${w.why}`);
}

/** The column headers of the fit's table, in the locale of the process. */
export function fitColumns(): string[] {
  const keys = [
    "fit.colMemory",
    "fit.colBudget",
    "fit.colWeights",
    "fit.colKv",
    "fit.colOverhead",
    "fit.colNeed",
  ] as const;
  return [t("status.colNode"), ...keys.map((k) => t(k)), t("fit.colVerdict")];
}

/** The table's rows, one a node, in the order of fitColumns. */
export function fitRows(fit: Fit): string[][] {
  return fit.nodes.map((n) => {
    const c = fitCells(n);
    return [n.node, c.memory, c.budget, c.weights, c.kv, c.overhead, c.need, c.verdict];
  });
}

/** The fit as plain lines (the Pulumi program's log), aligned in terminal cells in every language. */
export function fitLines(fit: Fit): string[] {
  return [...fitHeader(fit), ...columns(fitColumns(), fitRows(fit)), ...fitNotes(fit)];
}

/** A refusal and the nodes it is about: SM121_ALLOW_UNFIT must name every one of them. */
export interface FitRefusal {
  nodes: string[];
  text: string;
}

/** The memory fit of every deployment, and of every node as one budget (./nodefit). */
export function deploymentFits(
  bundles: readonly DeploymentBundle[],
  recipes: ReadonlyMap<string, Recipe>,
  facts: Readonly<Record<string, NodeModelFacts>>,
): Array<{ b: DeploymentBundle; fit: Fit }> {
  return bundles.map((b) => ({ b, fit: fitOf(b, recipes.get(b.recipe), facts) }));
}

/** A warning per tight node of each deployment, and one per deployment whose fit stays unknown. */
export function fitWarnings(fits: ReadonlyArray<{ b: DeploymentBundle; fit: Fit }>): string[] {
  const tight = (fit: Fit) => fit.nodes.filter((n) => n.verdict === "tight");
  return fits.flatMap(({ b, fit }) => [
    ...tight(fit).map((n) =>
      t("fit.tightWarning", { deployment: fit.deployment, node: n.node, why: say(n.why ?? msg("fit.unknown")) }),
    ),
    ...(fit.verdict === "unknown" ? [unknownWords(fit, b.recipeFile)] : []),
  ]);
}

/** A fit that stays unknown, in words: why, what an up then risks, how to know it. */
export function unknownWords(fit: Fit, recipeFile: string): string {
  const why = fit.nodes.find((n) => n.verdict === "unknown")?.why ?? msg("fit.unknown");
  return t("fit.unknownWarning", { deployment: fit.deployment, why: say(why), file: recipeFile });
}
