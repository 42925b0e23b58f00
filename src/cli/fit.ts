/**
 * The memory fit in the CLI: the table `sm121 render` (a GB10's memory, the recipe's `[memory]`)
 * and `sm121 doctor` (the nodes' MemTotal and HF caches) print, and doctor's check per node. The
 * numbers and verdicts come from render/memfit.ts, the same the preview uses.
 */
import { fitFixes } from "../render/fitrefusal";
import { fitColumns, fitRows, fitHeader, fitNotes, gib, unknownWords, verdictText, type Fit } from "../render/memfit";
import { listMsg, msg, say, t } from "../text/messages";
import type { DoctorCheck } from "./doctorschema";
import { table } from "./table";

/** The fit's table; a fit that stays unknown is said in words, not a table of question marks. */
export function fitTable(fit: Fit, recipeFile: string): string[] {
  if (fit.verdict === "unknown") return [unknownWords(fit, recipeFile)];
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
          hint: ok ? null : hintOf(fit, n, recipeFile),
          deployments: [fit.deployment],
        },
      ];
    }),
  );
}

/** What to do about a node's fit: the fixes that can make a refused one fit (render/fitrefusal), or how to know it. */
function hintOf(fit: Fit, n: Fit["nodes"][number], recipeFile: string): string {
  if (n.verdict === "unknown") return t("fit.hintUnknown", { file: recipeFile });
  const fixes = fitFixes(fit, n);
  if (n.verdict === "refused" && fixes.length === 0)
    return say(msg("fit.refusalNoFix", { file: recipeFile, nodes: n.node }));
  if (n.verdict === "refused") return `${say(listMsg(fixes, "semi"))} (${recipeFile})`;
  return t("fit.hint", { file: recipeFile });
}
