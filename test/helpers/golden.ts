/**
 * Golden files: rendered bundles pinned byte for byte, because one changed byte restarts an engine.
 * `UPDATE_GOLDEN=1 npx vitest run <file>` rewrites them; review the diff before committing it.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, relative } from "node:path";

const UPDATE = process.env["UPDATE_GOLDEN"] === "1";

/** The first line where two texts differ, 1-based, with both versions of that line. */
export function firstDifference(expected: string, actual: string): string {
  const a = expected.split("\n");
  const b = actual.split("\n");
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (a[i] !== b[i]) {
      return (
        `line ${i + 1}:\n  golden: ${JSON.stringify(a[i] ?? "<end of file>")}\n` +
        `  actual: ${JSON.stringify(b[i] ?? "<end of file>")}`
      );
    }
  }
  return "the texts differ only in bytes that split() does not show";
}

/**
 * With UPDATE_GOLDEN=1 writes `actual` to `path`; otherwise fails unless the file holds exactly
 * `actual`. The failure names the first differing line and the command that updates the file.
 */
export function expectGolden(path: string, actual: string, test = "test/render-golden.test.ts"): void {
  const shown = relative(process.cwd(), path);
  if (UPDATE) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, actual);
    return;
  }
  const how = `if the change is intended, run UPDATE_GOLDEN=1 npx vitest run ${test} and review \`git diff ${shown}\``;
  if (!existsSync(path)) throw new Error(`golden file ${shown} does not exist; ${how}`);
  const expected = readFileSync(path, "utf8");
  if (expected !== actual) {
    throw new Error(`${shown} does not match (${firstDifference(expected, actual)}); ${how}`);
  }
}
