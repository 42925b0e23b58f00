/**
 * Which option of an engine's real parser a command-line token selects, by CPython argparse's
 * rules (Lib/argparse.py `_parse_optional` / `_get_option_tuples`, unchanged from 3.11 to 3.13.0)
 * over the option tables extracted from the installed engines (scripts/engine-options/):
 *   - an exact spelling, or `--opt=value` / `-o=value`;
 *   - with allow_abbrev, any unambiguous prefix of a `--long` spelling (`--tensor-parallel`);
 *   - a single-dash token: its first two characters as a short option with the rest as its value
 *     (`-n2`), or any spelling it is a prefix of (`-t` for `-tp`);
 *   - vLLM's FlexibleArgumentParser first rewrites `_` to `-` in `--name` (up to `=` or `.`),
 *     `-O<level>` to `--optimization-level <level>`, and `--opt.key value` to `--opt <json>`.
 * A token argparse classifies as an option ("O") ends the values of the option before it.
 */
import type { OptionSpec, OptionTable } from "./table";

export interface Selected {
  option: OptionSpec;
  /** The spelling argparse matched (after vLLM's rewrite). */
  spelling: string;
  /** The value written into the same token (`--opt=v`, `-n2`, `-O3`), if any. */
  explicit: string | undefined;
  /** vLLM's `--opt.key value`: the next token is its value whatever it looks like. */
  dotted: boolean;
}

export type Classified =
  | { kind: "positional" }
  | { kind: "option"; sel: Selected }
  | { kind: "ambiguous"; matches: string[] }
  | { kind: "unknown"; key: string };

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

/** vLLM's rewrite of one token before argparse sees it (FlexibleArgumentParser.parse_args). */
function flexible(token: string): { token: string; dotted: boolean; level?: string } {
  if (token.startsWith("--")) {
    const eq = token.indexOf("=");
    const key = eq < 0 ? token : token.slice(0, eq);
    const rest = eq < 0 ? "" : token.slice(eq);
    const dot = key.indexOf(".");
    const head = dot < 0 ? key : key.slice(0, dot);
    const renamed = `--${head.slice(2).replace(/_/g, "-")}${dot < 0 ? "" : key.slice(dot)}`;
    return { token: `${renamed}${rest}`, dotted: dot >= 0 };
  }
  if (token.startsWith("-O") && token !== "-O")
    return { token: "--optimization-level", dotted: false, level: token[2] === "=" ? token.slice(3) : token.slice(2) };
  const key = token.split("=")[0] ?? token;
  return { token, dotted: token.startsWith("-") && key.includes(".") };
}

export class OptionIndex {
  private readonly bySpelling = new Map<string, OptionSpec>();
  private readonly negativeLike: boolean;

  constructor(readonly table: OptionTable) {
    for (const o of table.options) for (const s of o.spellings) this.bySpelling.set(s, o);
    this.negativeLike = [...this.bySpelling.keys()].some((s) => NEGATIVE_NUMBER.test(s));
  }

  /** Every spelling argparse knows, for "did you mean". */
  spellings(): string[] {
    return [...this.bySpelling.keys()];
  }

  /** What argparse makes of `token` as it scans the arguments. */
  classify(token: string): Classified {
    if (token === "" || !this.table.prefixChars.includes(token[0] ?? "")) return { kind: "positional" };
    const flex = this.table.underscoresAsDashes ? flexible(token) : { token, dotted: false };
    if (flex.level !== undefined) {
      const o = this.bySpelling.get(flex.token);
      if (o !== undefined)
        return { kind: "option", sel: { option: o, spelling: flex.token, explicit: flex.level, dotted: false } };
    }
    // A dotted vLLM key (`--compilation-config.mode 3`) is passed on as its base key with a JSON
    // value, which argparse then matches like any other token (abbreviations included).
    const key = flex.dotted ? (flex.token.split(".")[0] ?? flex.token) : flex.token;
    const exact = this.bySpelling.get(key);
    if (exact !== undefined)
      return { kind: "option", sel: { option: exact, spelling: key, explicit: undefined, dotted: flex.dotted } };
    if (key.length === 1) return { kind: "positional" };
    const eq = key.indexOf("=");
    if (eq >= 0) {
      const o = this.bySpelling.get(key.slice(0, eq));
      if (o !== undefined)
        return {
          kind: "option",
          sel: { option: o, spelling: key.slice(0, eq), explicit: key.slice(eq + 1), dotted: false },
        };
    }
    const tuples = this.optionTuples(key);
    if (tuples.length > 1) return { kind: "ambiguous", matches: tuples.map((t) => t.spelling) };
    const [one] = tuples;
    if (one !== undefined) return { kind: "option", sel: { ...one, dotted: flex.dotted } };
    if (NEGATIVE_NUMBER.test(key) && !this.negativeLike) return { kind: "positional" };
    if (key.includes(" ")) return { kind: "positional" };
    return { kind: "unknown", key: key.split("=")[0] ?? key };
  }

  /** argparse's _get_option_tuples: abbreviations of long options, short options with glued values. */
  private optionTuples(token: string): Array<Omit<Selected, "dotted">> {
    const out: Array<Omit<Selected, "dotted">> = [];
    const chars = this.table.prefixChars;
    const second = token[1] ?? "";
    if (chars.includes(second)) {
      if (!this.table.allowAbbrev) return out;
      const eq = token.indexOf("=");
      const prefix = eq < 0 ? token : token.slice(0, eq);
      const explicit = eq < 0 ? undefined : token.slice(eq + 1);
      for (const [s, o] of this.bySpelling) if (s.startsWith(prefix)) out.push({ option: o, spelling: s, explicit });
      return out;
    }
    const short = token.slice(0, 2);
    for (const [s, o] of this.bySpelling) {
      if (s === short) out.push({ option: o, spelling: s, explicit: token.slice(2) });
      else if (s.startsWith(token)) out.push({ option: o, spelling: s, explicit: undefined });
    }
    return out;
  }
}
