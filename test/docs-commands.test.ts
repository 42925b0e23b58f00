/**
 * The docs name only commands and flags that exist: every `sm121 <verb> --flag` in a code span or
 * block of README.md and docs/*.md is a verb of the CLI's table (src/cli/usage.ts, the one the
 * parser and `sm121 --help` read) with flags it takes, and every `npm run <script>` is a script of
 * package.json.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { VERBS } from "../src/cli/usage";
import { REPO } from "./helpers/project";

const DOCS = readdirSync(join(REPO, "docs")).filter((f) => f.endsWith(".md"));
const FILES = ["README.md", ...DOCS.map((f) => `docs/${f}`)];

/** The code of a Markdown file: its fenced blocks' lines and its inline code spans, with line numbers. */
function codeOf(text: string): { line: number; code: string }[] {
  const out: { line: number; code: string }[] = [];
  let fenced = false;
  for (const [i, l] of text.split("\n").entries()) {
    if (/^\s*```/.test(l)) {
      fenced = !fenced;
      continue;
    }
    if (fenced && !/^\s*#/.test(l)) out.push({ line: i + 1, code: l });
    else for (const m of l.matchAll(/`([^`]+)`/g)) out.push({ line: i + 1, code: m[1] ?? "" });
  }
  return out;
}

/** Each `sm121 <verb> ...` command in a piece of code, up to where a shell or a comment ends it. */
function commands(code: string): { verb: string; flags: string[] }[] {
  // Where a shell starts a command: the line's start (after a prompt), `$(`, a pipe, `&&`, `;`,
  // and any VAR=value before it. Elsewhere "sm121 ..." is prose or output.
  const at = String.raw`(?:^\s*(?:\$ )?|\$\(|\|\s*|&&\s*|;\s*)(?:[A-Z_][A-Z0-9_]*=\S* )*`;
  const start = new RegExp(`${at}(?:npx )?sm121 ([a-z][a-z-]*)([^|;&#)]*)`, "g");
  return [...code.matchAll(start)].map((m) => ({
    verb: m[1] ?? "",
    flags: [...(m[2] ?? "").matchAll(/(?:^|\s)--([a-z][a-z-]*)/g)].map((f) => f[1] ?? ""),
  }));
}

describe("the docs' commands", () => {
  const pkg = JSON.parse(readFileSync(join(REPO, "package.json"), "utf8")) as { scripts: object };
  const scripts = Object.keys(pkg.scripts);
  const found: string[] = [];
  const wrong: string[] = [];
  for (const f of FILES) {
    for (const { line, code } of codeOf(readFileSync(join(REPO, f), "utf8"))) {
      for (const c of commands(code)) {
        found.push(c.verb);
        const verb = (VERBS as Record<string, { flags: Record<string, unknown> } | undefined>)[c.verb];
        if (verb === undefined) wrong.push(`${f}:${line}: sm121 ${c.verb}: no such verb`);
        for (const flag of c.flags) {
          if (verb === undefined || flag in verb.flags) continue;
          wrong.push(`${f}:${line}: sm121 ${c.verb} --${flag}: no such flag`);
        }
      }
      for (const m of code.matchAll(/npm run ([a-z][a-z:-]*)/g)) {
        if (!scripts.includes(m[1] ?? "")) wrong.push(`${f}:${line}: npm run ${m[1] ?? ""}: no such script`);
      }
    }
  }

  it("finds the commands the docs show", () => {
    expect(new Set(found).size).toBeGreaterThanOrEqual(8);
  });

  it("names only verbs, flags and scripts that exist", () => {
    expect(wrong).toEqual([]);
  });
});
