/**
 * The house rules for code (STYLE.md): no line over 120 columns, no file over 500 lines. Prettier
 * wraps code at 120 but leaves long strings and comments whole, so this test is what keeps them
 * short. It reads every tracked code file; recorded outputs (test/golden, test/fixtures) stay as
 * recorded. Columns are terminal cells, as Prettier and the CLI's tables count them: "—" and "д"
 * take one, a CJK character two. A failure lists each file:line (or file and its length) to mend.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { cells as columns } from "../src/text/width";
import { REPO } from "./helpers/project";

const MAX_COLUMNS = 120;
const MAX_LINES = 500;

const CODE = /\.(ts|mts|mjs|js|sh)$|^bin\//;
const RECORDED = /^test\/(golden|fixtures)\//;

function codeFiles(): string[] {
  const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: REPO, encoding: "utf8" }).split("\0");
  return tracked.filter((p) => CODE.test(p) && !RECORDED.test(p) && existsSync(join(REPO, p)));
}

function linesOf(path: string): string[] {
  const text = readFileSync(join(REPO, path), "utf8");
  const lines = text.split("\n");
  if (lines.at(-1) === "") lines.pop();
  return lines;
}

describe("the house rules for code", () => {
  const files = codeFiles();

  it("finds the code files", () => {
    expect(files).toContain("src/index.ts");
    expect(files).toContain("bin/sm121");
    expect(files.some((p) => RECORDED.test(p))).toBe(false);
  });

  it(`has no line over ${MAX_COLUMNS} columns`, () => {
    const long = files.flatMap((path) =>
      linesOf(path).flatMap((line, i) =>
        columns(line) > MAX_COLUMNS ? [`${path}:${i + 1} (${columns(line)} columns)`] : [],
      ),
    );
    expect(long.join("\n"), `lines over ${MAX_COLUMNS} columns`).toBe("");
  });

  it(`has no file over ${MAX_LINES} lines`, () => {
    const big = files.flatMap((path) => {
      const n = linesOf(path).length;
      return n > MAX_LINES ? [`${path} (${n} lines)`] : [];
    });
    expect(big.join("\n"), `files over ${MAX_LINES} lines`).toBe("");
  });
});
