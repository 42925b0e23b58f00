/**
 * One memory budget per node (sparkrun and GPUStack keep one too): every deployment the site puts
 * on a node claims its share of the node's memory, and the claims together must leave the OS its
 * part. A deployment's claim is what its engine takes: its utilization setting x MemTotal (vLLM,
 * gr8 and DGPP take that whole budget at start: the KV cache fills what the weights leave), plus
 * the engine's overhead where it lives outside that budget (SGLang's mem_fraction_static covers
 * weights and KV pool only). Each deployment alone is checked by ./memfit; a node shared by two or
 * more is refused when their claims add up to more than NODE_SHARE of its memory.
 */
import { driverFor } from "../engines";
import { msg, say, t, type Msg } from "../text/messages";
import { columns } from "../text/width";
import { fitLines, gib, verdictText, type Fit, type FitRefusal } from "./memfit";
import type { DeploymentBundle } from "./types";

/**
 * The share of a node's memory its engines may claim together: what one vLLM engine takes by
 * default (--gpu-memory-utilization 0.9), which leaves the OS, the page cache and sshd the rest.
 */
export const NODE_SHARE = 0.9;

export interface NodeClaim {
  deployment: string;
  claimGiB: number;
  /** How the claim is made up: "0.45 x 121.7 GiB (--gpu-memory-utilization in recipes/a.toml)". */
  how: Msg;
}

export interface NodeBudget {
  node: string;
  memoryGiB: number;
  /** "node" (its MemTotal, from the look) or "GB10" (no node was asked). */
  memoryFrom: "node" | "GB10";
  limitGiB: number;
  claims: NodeClaim[];
  totalGiB: number;
  /** over: two or more deployments share the node and claim more than the limit. */
  verdict: "fits" | "over";
}

export function nodeBudgets(fits: ReadonlyArray<{ b: DeploymentBundle; fit: Fit }>): NodeBudget[] {
  const by = new Map<string, NodeBudget>();
  for (const { b, fit } of fits) {
    const util = fit.knobs.util;
    const outside = !driverFor(fit.engine).memory.overheadInBudget;
    for (const n of fit.nodes) {
      const claimGiB = n.budgetGiB + (outside ? n.overheadGiB : 0);
      const over = outside ? msg("fit.claimOutside", { overhead: gib(n.overheadGiB) }) : "";
      const of = { util: util.value, memory: gib(n.memoryGiB) };
      const how = msg("fit.claimHow", { ...of, from: util.from, file: b.recipeFile, over });
      const claim = { deployment: fit.deployment, claimGiB, how };
      const at = by.get(n.node) ?? {
        node: n.node,
        memoryGiB: n.memoryGiB,
        memoryFrom: n.memoryFrom,
        limitGiB: n.memoryGiB * NODE_SHARE,
        claims: [],
        totalGiB: 0,
        verdict: "fits" as const,
      };
      at.claims.push(claim);
      at.totalGiB += claimGiB;
      by.set(n.node, at);
    }
  }
  const over = (n: NodeBudget) => n.claims.length > 1 && n.totalGiB > n.limitGiB;
  return [...by.values()].map((n) => ({ ...n, verdict: over(n) ? "over" : "fits" }));
}

/** The plan's memory table of the nodes: each node's claims and total against its memory. */
export function nodeLines(budgets: readonly NodeBudget[]): string[] {
  if (budgets.length === 0) return [];
  const rows = budgets.map((n) => [
    n.node,
    `${gib(n.memoryGiB)}${n.memoryFrom === "GB10" ? " (GB10)" : ""}`,
    n.claims.map((c) => `${c.deployment} ${gib(c.claimGiB)}`).join(" + "),
    gib(n.totalGiB),
    t("fit.nodeVerdict", { verdict: verdictText(n.verdict === "over" ? "refused" : "fits"), limit: gib(n.limitGiB) }),
  ]);
  const header = [t("status.colNode"), t("fit.colMemory"), t("fit.colClaims"), t("fit.colTotal"), t("fit.colVerdict")];
  return [t("fit.nodeTitle", { share: NODE_SHARE }), ...columns(header, rows)];
}

/**
 * The plan's memory fit: the table of each deployment the look did not find running as declared,
 * then the nodes they use (with every claim there, a running neighbour's too) and any node over
 * its limit. The deployments it found running as declared (`steady`) take one line: their fit is
 * the one they run with, and `sm121 doctor` shows it.
 */
export function planFitLines(
  fits: ReadonlyArray<{ fit: Fit }>,
  budgets: readonly NodeBudget[],
  steady: ReadonlySet<string>,
): string[] {
  const starting = fits.filter(({ fit }) => !steady.has(fit.deployment));
  const used = new Set(starting.flatMap(({ fit }) => fit.nodes.map((n) => n.node)));
  const kept = fits.filter(({ fit }) => steady.has(fit.deployment)).map(({ fit }) => fit.deployment);
  // A fit that stays unknown is a warning in words (memfit fitWarnings), not a table of question marks.
  return [
    ...starting.filter(({ fit }) => fit.verdict !== "unknown").flatMap(({ fit }) => fitLines(fit)),
    ...nodeLines(budgets.filter((n) => used.has(n.node) || n.verdict === "over")),
    ...(kept.length > 0 ? [t("fit.steady", { deployments: kept.join(", ") })] : []),
  ];
}

/** Why an over-committed node is refused: each deployment's share, the total, the limit and the fix. */
export function nodeRefusals(budgets: readonly NodeBudget[]): FitRefusal[] {
  return budgets
    .filter((n) => n.verdict === "over")
    .map((n) => {
      const claim = (c: NodeClaim) => {
        return t("fit.claims", { deployment: c.deployment, claim: gib(c.claimGiB), how: say(c.how) });
      };
      const claims = n.claims.map(claim).join(" + ");
      const limit = t("fit.limit", { limit: gib(n.limitGiB), share: NODE_SHARE, memory: gib(n.memoryGiB) });
      const fix = t("fit.overFix", { share: NODE_SHARE, node: n.node });
      const text = t("fit.overCommitted", { node: n.node, claims, total: gib(n.totalGiB), limit, fix });
      return { nodes: [n.node], text };
    });
}
