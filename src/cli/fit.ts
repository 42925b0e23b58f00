/**
 * The memory fit in the CLI: the table `sm121 render` (a GB10's memory, the recipe's `[memory]`)
 * and `sm121 doctor` (the nodes' MemTotal and HF caches) print, and doctor's check per node. The
 * numbers and verdicts come from render/memfit.ts, the same the preview uses.
 */
import { fitCells, fitHeader, fitNotes, gib, type Fit } from "../render/memfit";
import { t } from "../text/messages";
import type { DoctorCheck } from "./schemas";
import { table } from "./table";

export function fitTable(fit: Fit): string[] {
  const rows = fit.nodes.map((n) => {
    const c = fitCells(n);
    return [n.node, c.memory, c.budget, c.weights, c.kv, c.overhead, c.need, c.verdict];
  });
  const header = [t("status.colNode"), t("fit.colMemory"), t("fit.colBudget"), t("fit.colWeights"), t("fit.colKv"), t("fit.colOverhead"), t("fit.colNeed"), t("fit.colVerdict")];
  return [...fitHeader(fit), ...table(header, rows), ...fitNotes(fit)];
}

/** Doctor's memory-fit check of each node of the fit: a refusal is a problem, a tight or unknown fit a warning. */
export function fitChecks(fit: Fit, recipeFile: string): Map<string, DoctorCheck> {
  return new Map(fit.nodes.map((n): [string, DoctorCheck] => {
    // An unknown fit is no pass: a warning that says how to know it.
    const ok = n.verdict === "fits";
    const need = n.needGiB === undefined ? "" : `${t("fit.detail", { need: gib(n.needGiB), budget: gib(n.budgetGiB) })}; `;
    return [n.node, {
      check: "memory-fit",
      subject: fit.deployment,
      ok,
      severity: n.verdict === "refused" ? "problem" : "warning",
      detail: `${need}${n.verdict}${n.why === undefined ? "" : `: ${n.why}`}`,
      hint: ok ? null : t(n.verdict === "unknown" ? "fit.hintUnknown" : "fit.hint", { file: recipeFile }),
      deployments: [fit.deployment],
    }];
  }));
}
