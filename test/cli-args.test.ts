/**
 * The CLI's parsing (Node's util.parseArgs, strict), its usage text built from the same table, and
 * the tables: display width of wide characters, and the 100-column fit with an ellipsis.
 */
import { describe, expect, it } from "vitest";
import { UsageError, num, parseArgs, str } from "../src/cli/args";
import { cells, fitWidths, table, wrap, TABLE_COLUMNS } from "../src/cli/table";
import { tableRows } from "./cli-helpers";
import { VERBS, flagSpec, usage, verbUsage, type Verb } from "../src/cli/usage";

const verbs = Object.keys(VERBS) as Verb[];

function usageError(f: () => unknown): string {
  try {
    f();
  } catch (e) {
    if (e instanceof UsageError) return e.message;
    throw e;
  }
  throw new Error("no usage error");
}

describe("parseArgs", () => {
  const spec = flagSpec("logs");

  it("reads flags as `--flag value` and `--flag=value`, booleans, and positionals around them", () => {
    const p = parseArgs(["flash", "--lines", "5", "--node=spark2", "--follow", "extra"], spec);
    expect(p).toEqual({ positional: ["flash", "extra"], flags: { lines: "5", node: "spark2", follow: true } });
    expect(num(p, "lines", 100)).toBe(5);
    expect(str(p, "stack")).toBeUndefined();
  });

  it("takes everything after `--` as positionals", () => {
    expect(parseArgs(["--", "--lines", "x"], spec).positional).toEqual(["--lines", "x"]);
  });

  it("names an unknown flag and the flags the verb knows", () => {
    expect(usageError(() => parseArgs(["flash", "--jsn"], flagSpec("render")))).toBe(
      "unknown option --jsn (known: --stack, --lang, --help, --node, --step, --json, --out)",
    );
    expect(usageError(() => parseArgs(["-x"], spec))).toMatch(/^unknown option -x \(known: /);
  });

  it("refuses a value for a boolean, a missing value, a flag where a value belongs, and a non-number", () => {
    expect(usageError(() => parseArgs(["--follow=yes"], spec))).toBe("--follow takes no value");
    expect(usageError(() => parseArgs(["--node"], spec))).toBe("--node needs a value");
    expect(usageError(() => parseArgs(["--node", "--follow"], spec))).toBe("--node needs a value");
    expect(usageError(() => parseArgs(["--node", "n1", "--jsn"], spec))).toMatch(/^unknown option --jsn \(known: /);
    expect(usageError(() => parseArgs(["--lines", "many"], spec))).toBe('--lines needs a number, got "many"');
  });
});

describe("the usage text", () => {
  it.each(verbs.map((v) => [v]))("sm121 %s --help lists every flag its parser takes, and no other", (verb) => {
    const text = verbUsage(verb);
    const listed = [...text.matchAll(/^ {2}--([a-z-]+)/gm)].map((m) => m[1]);
    expect(listed).toEqual(Object.keys(flagSpec(verb)));
    expect(text).toMatch(new RegExp(`^usage: sm121 ${verb}\\b`));
  });

  it("sm121 --help names every verb and each verb's own flags", () => {
    const text = usage();
    for (const v of verbs) {
      expect(text).toMatch(new RegExp(`^ {2}${v}\\b`, "m"));
      for (const f of Object.keys(flagSpec(v))) expect(text).toContain(`--${f}`);
    }
  });
});

describe("tables", () => {
  it("measures East Asian wide characters as two cells, and combining marks and ANSI colours as none", () => {
    expect(cells("abc")).toBe(3);
    expect(cells("节点")).toBe(4);
    expect(cells("ノード")).toBe(6);
    expect(cells("ｱｲ")).toBe(2);
    expect(cells("e\u0301")).toBe(1);
    expect(cells("\u001b[31mred\u001b[0m")).toBe(3);
  });

  it("aligns columns after wide characters", () => {
    const [h, r] = table(["节点", "STATE"], [["spark1", "运行"]]);
    expect(h?.indexOf("STATE")).toBe(8);
    expect(cells((r ?? "").slice(0, (r ?? "").indexOf("运行")))).toBe(
      cells((h ?? "").slice(0, (h ?? "").indexOf("STATE"))),
    );
  });

  it("wraps a cell at spaces to its width, and cuts a longer word in whole characters", () => {
    expect(wrap("running sm121-solo-0 since 2026-11-30T03:17:24Z", 22)).toEqual([
      "running sm121-solo-0",
      "since",
      "2026-11-30T03:17:24Z",
    ]);
    expect(wrap("节点节点节点", 5)).toEqual(["节点", "节点", "节点"]);
    expect(wrap("abcdefghij", 4)).toEqual(["abcd", "efgh", "ij"]);
    expect(wrap("short", 10)).toEqual(["short"]);
  });

  it("fits 100 columns: the widest column gives way first, never below its minimum, and nothing is lost", () => {
    expect(fitWidths([10, 80, 40], [4, 12, 12], 100, 6)).toEqual([10, 44, 40]);
    expect(fitWidths([10, 80, 80], [4, 12, 12], 100, 6)).toEqual([10, 42, 42]);
    expect(fitWidths([10, 20], [4, 12], 100, 2)).toEqual([10, 20]);
    const state = `running sm121-solo-0 since 2026-11-30T03:17:24Z ${"and more words ".repeat(6).trim()}`;
    const health = `not asked: protected node (--yes) ${"节点 ".repeat(20).trim()}`;
    const lines = table(
      ["NODE", "STATE", "HEALTH"],
      [
        ["spark1 (protected)", state, health],
        ["spark2", "stopped", "ok"],
      ],
    );
    for (const l of lines) expect(cells(l)).toBeLessThanOrEqual(TABLE_COLUMNS);
    expect(lines.length).toBeGreaterThan(3);
    expect(tableRows(lines.join("\n"), "NODE")).toEqual([
      { NODE: "spark1 (protected)", STATE: state, HEALTH: health },
      { NODE: "spark2", STATE: "stopped", HEALTH: "ok" },
    ]);
  });

  it("leaves a table that fits as it is", () => {
    expect(table(["A", "B"], [["1", "2"]])).toEqual(["  A  B", "  1  2"]);
  });
});
