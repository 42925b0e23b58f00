/**
 * The plan's memory fit (render/memfit, render/nodefit): the tables of what starts, the refusal of
 * a deployment or a node that cannot fit, before any node is touched, unless SM121_ALLOW_UNFIT names
 * its nodes, and the warnings of a tight or unknown fit.
 */
import type { Recipe } from "../recipe/types";
import { deploymentRefusals } from "../render/fitrefusal";
import { deploymentFits, fitWarnings, type FitRefusal } from "../render/memfit";
import { nodeBudgets, nodeRefusals, planFitLines } from "../render/nodefit";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import { t } from "../text/messages";
import type { PlanLine } from "./types";

/**
 * The memory fit of every deployment and node: its lines, and the refusals not allowed (`unfit`:
 * SM121_ALLOW_UNFIT). What the look found running as declared (`steady`) gets a line, not its tables.
 */
export function memoryFit(
  bundles: readonly DeploymentBundle[],
  recipes: ReadonlyMap<string, Recipe>,
  seen: SiteObservation,
  steady: ReadonlySet<string>,
  unfit: readonly string[],
): { lines: PlanLine[]; refused?: string } {
  // A deployment the look could not see starts nothing in this run: it has no fit to say.
  const seenOnes = bundles.filter((b) => seen.unknown[b.deployment] === undefined);
  const fits = deploymentFits(seenOnes, recipes, seen.models);
  const budgets = nodeBudgets(fits);
  const tables = planFitLines(fits, budgets, steady);
  // One line for the whole site: each of the program's log calls is a round trip to the engine.
  const lines: PlanLine[] = tables.length > 0 ? [{ level: "info", text: tables.join("\n") }] : [];
  const refusals = [...deploymentRefusals(fits), ...nodeRefusals(budgets)];
  const ok = (r: FitRefusal) => unfit.includes("1") || r.nodes.every((n) => unfit.includes(n));
  const refused = refusals.filter((r) => !ok(r));
  if (refused.length > 0) return { lines, refused: refused.map((r) => r.text).join("\n") };
  for (const r of refusals)
    lines.push({ level: "warn", text: t("serve.unfitAllowed", { allowed: unfit.join(","), why: r.text }) });
  const warnings = fitWarnings(fits.filter(({ b }) => !steady.has(b.deployment)));
  return { lines: [...lines, ...warnings.map((text): PlanLine => ({ level: "warn", text }))] };
}
