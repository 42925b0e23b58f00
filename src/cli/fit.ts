/**
 * The memory fit in the CLI: the table `sm121 render` (a GB10's memory, the recipe's `[memory]`)
 * and `sm121 doctor` (the nodes' MemTotal and HF caches) print, and doctor's check per node. The
 * numbers and verdicts come from render/memfit.ts, the same the preview uses.
 */
import { fitColumns, fitRows, fitHeader, fitNotes, gib, verdictText, type Fit } from "../render/memfit";
import { say, t } from "../text/messages";
import type { DoctorCheck } from "./schemas";
import { table } from "./table";

export function fitTable(fit: Fit): string[] {
  return [...fitHeader(fit), ...table(fitColumns(), fitRows(fit)), ...fitNotes(fit)];
}

/** Doctor's memory-fit check of each node of the fit: a refusal is a problem, a tight or unknown fit a warning. */
export function fitChecks(fit: Fit, recipeFile: string): Map<string, DoctorCheck> {
  return new Map(
    fit.nodes.map((n): [string, DoctorCheck] => {
      // An unknown fit is no pass: a warning that says how to know it.
      const ok = n.verdict === "fits";
      const need =
        n.needGiB === undefined ? "" : `${t("fit.detail", { need: gib(n.needGiB), budget: gib(n.budgetGiB) })}; `;
      return [
        n.node,
        {
          check: "memory-fit",
          subject: fit.deployment,
          ok,
          severity: n.verdict === "refused" ? "problem" : "warning",
          detail: `${need}${verdictText(n.verdict)}${n.why === undefined ? "" : `: ${say(n.why)}`}`,
          hint: ok ? null : t(n.verdict === "unknown" ? "fit.hintUnknown" : "fit.hint", { file: recipeFile }),
          deployments: [fit.deployment],
        },
      ];
    }),
  );
}
