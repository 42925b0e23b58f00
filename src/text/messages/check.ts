/**
 * The build's check of the catalogues (`npm run build` runs it after tsc): every area in every
 * locale against the one schema (./index checkCatalogue). A catalogue that is not valid fails the
 * build, naming its file and key, so the program and the CLI need not check them at each run.
 */
import { AREAS, LOCALES, checkCatalogue, type AreaName } from "./index";

const problems: string[] = [];
for (const area of Object.keys(AREAS) as AreaName[])
  for (const locale of LOCALES) {
    try {
      checkCatalogue(area, locale);
    } catch (err) {
      problems.push(err instanceof Error ? err.message : String(err));
    }
  }
if (problems.length > 0) {
  process.stderr.write(`${problems.join("\n")}\n`);
  process.exitCode = 1;
}
