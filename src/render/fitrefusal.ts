/**
 * Why a deployment cannot fit in memory, with the numbers, and the fixes that can make it fit,
 * each checked against the numbers: a utilization up to the node's limit (never one past it: a
 * model larger than the node is not fixed by a setting), a shorter context or an fp8 KV cache
 * where the weights leave room, a quantized checkpoint (fp8 holds half of a 16-bit checkpoint's
 * weights), more nodes (tensor parallelism divides the weights and the KV cache). Pure.
 */
import { driverFor } from "../engines";
import { listMsg, msg, say, type Msg } from "../text/messages";
import { gib, type Fit, type FitRefusal, type NodeFit } from "./memfit";
import { NODE_SHARE } from "./nodefit";
import type { DeploymentBundle } from "./types";

/** The most nodes a fix names: a site of Sparks is small. */
const MAX_NODES = 8;
/** Weight dtypes a quantized (fp8) checkpoint halves. */
const SIXTEEN_BIT = new Set(["bfloat16", "float16", "bf16", "fp16"]);

/** The fixes that can make `n` fit, in the order an operator would try them; none when none can. */
export function fitFixes(fit: Fit, n: NodeFit): Msg[] {
  const k = fit.knobs;
  const mem = driverFor(fit.engine).memory;
  const over = mem.overheadInBudget ? n.overheadGiB : 0;
  const w = n.weightsGiB ?? 0;
  const kv = n.kvOneGiB;
  const need = n.needGiB ?? w + over + (kv ?? 0);
  const fits = (weights: number, cache: number) => weights + over + cache <= n.budgetGiB;
  const fixes: Msg[] = [];
  // A utilization that holds it, if the node's limit can: past it the OS has no room.
  if (need <= n.memoryGiB * NODE_SHARE) {
    const value = Math.min(NODE_SHARE, Math.ceil((need / n.memoryGiB) * 100) / 100);
    const util = k.util.byDefault === true ? mem.utilName : k.util.from;
    fixes.push(msg("fit.fixUtil", { util, value }));
  }
  const len = k.maxModelLen?.value;
  if (kv !== undefined && len !== undefined && fits(w, 0)) {
    const room = n.budgetGiB - w - over;
    const shorter = Math.floor(((room / kv) * len) / 1024) * 1024;
    if (shorter >= 1024 && shorter < len) fixes.push(msg("fit.fixContext", { len: shorter }));
    if (!/fp8/.test(k.kvDtype.value) && fits(w, kv / 2)) fixes.push(msg("fit.fixKvFp8"));
  }
  if (fit.weightsDtype !== undefined && SIXTEEN_BIT.has(fit.weightsDtype) && fits(w / 2, kv ?? 0))
    fixes.push(msg("fit.fixQuantized", { weights: gib(w / 2) }));
  const now = fit.nodes.length;
  for (let count = now + 1; count <= MAX_NODES; count++) {
    const share = now / count;
    if (!fits(w * share, (kv ?? 0) * share)) continue;
    fixes.push(msg("fit.fixNodes", { count }));
    break;
  }
  return fixes;
}

/** Why the plan is refused, with the numbers and the fix; undefined when every node can fit. */
export function fitRefusal(fit: Fit, recipeFile: string): string | undefined {
  const m = fitRefusalMsg(fit, recipeFile);
  return m === undefined ? undefined : say(m);
}

/**
 * The refusal as a message, for what keeps it (a Surge's why, in English) and says it again in
 * the reader's language.
 */
export function fitRefusalMsg(fit: Fit, recipeFile: string): Msg | undefined {
  const bad = fit.nodes.filter((n) => n.verdict === "refused");
  const worst = [...bad].sort((a, b) => (b.needGiB ?? 0) - b.budgetGiB - ((a.needGiB ?? 0) - a.budgetGiB))[0];
  if (worst === undefined) return undefined;
  const k = fit.knobs;
  const parts = bad.map((n) => {
    const len = k.maxModelLen?.value ?? "?";
    const kv =
      n.kvOneGiB === undefined ? "" : msg("fit.refusalKv", { kv: gib(n.kvOneGiB), len, dtype: k.kvDtype.value });
    const inBudget = driverFor(fit.engine).memory.overheadInBudget;
    const over = inBudget ? msg("fit.refusalOverhead", { overhead: gib(n.overheadGiB) }) : "";
    const budget = { budget: gib(n.budgetGiB), util: k.util.value, memory: gib(n.memoryGiB), from: k.util.from };
    const need = { weights: gib(n.weightsGiB ?? 0), kv, over, need: gib(n.needGiB ?? 0) };
    return msg("fit.refusalNode", { node: n.node, ...need, ...budget });
  });
  const fixes = fitFixes(fit, worst);
  const nodes = bad.map((n) => n.node).join(",");
  const fix =
    fixes.length > 0
      ? msg("fit.refusalFix", { fixes: listMsg(fixes, "semi"), file: recipeFile, nodes })
      : msg("fit.refusalNoFix", { file: recipeFile, nodes });
  const model = fit.model ?? msg("fit.itsModel");
  return msg("fit.refusal", { deployment: fit.deployment, model, parts: listMsg(parts, "semi"), fix });
}

/** Each deployment's refusal, with the nodes where it does not fit. */
export function deploymentRefusals(fits: ReadonlyArray<{ b: DeploymentBundle; fit: Fit }>): FitRefusal[] {
  return fits.flatMap(({ b, fit }) => {
    const text = fitRefusal(fit, b.recipeFile);
    const nodes = fit.nodes.filter((n) => n.verdict === "refused").map((n) => n.node);
    return text === undefined ? [] : [{ nodes, text }];
  });
}
