/**
 * A recipe's `args` read as the engine's parser reads them: every token is matched to the option
 * the engine would select (any spelling: underscores, abbreviations, aliases, `--opt=value`), so
 * an option sm121 owns is refused however it is written, and a token the engine would refuse
 * (unknown, ambiguous, missing value, invalid choice, stray positional) is refused here first,
 * with the nearest real option.
 */
import { didYouMean } from "../../recipe/locate";
import { msg, type Msg } from "../../text/messages";
import { OptionIndex, type Selected } from "./argparse";
import { canonical, type OptionSpec, type OptionTable } from "./table";

export interface ArgProblem {
  /** Index of the offending token in `args`. */
  index: number;
  problem: Msg;
  fix: Msg;
}

/** Why sm121 owns an option and what to set instead; `unless` lists values that are allowed. */
export interface Owned {
  why: Msg;
  unless?: readonly string[];
}

export interface ArgRules {
  table: OptionTable;
  /** The option's rule, by its dest, or undefined when the recipe may pass it. */
  owned(option: OptionSpec): Owned | undefined;
}

const list = (xs: readonly string[], max = 12): string =>
  xs.length > max ? `${xs.slice(0, max).join(", ")}, ...` : xs.join(", ");

/** How many following tokens the option takes, and whether it needs at least that many. */
function wants(o: OptionSpec): { min: number; max: number } {
  const n = o.nargs;
  if (typeof n === "number") return { min: n, max: n };
  if (n === "?") return { min: 0, max: 1 };
  if (n === "+") return { min: 1, max: Infinity };
  return { min: 0, max: Infinity };
}

function missing(o: OptionSpec): string {
  const n = o.nargs;
  if (n === 1) return "expected one argument";
  if (n === "+") return "expected at least one argument";
  return `expected ${String(n)} arguments`;
}

/** The problems of `args`, in order, computed as they are read (a caller may stop early). */
export function* checkArgs(rules: ArgRules, args: readonly string[]): Generator<ArgProblem> {
  const { table } = rules;
  const index = new OptionIndex(table);
  const engine = `${table.prog} ${table.version}`;
  const spellings = index.spellings().filter((s) => s.startsWith("--"));
  const takes = (j: number): boolean => j < args.length && index.classify(args[j] ?? "").kind === "positional";
  for (let i = 0; i < args.length; i++) {
    const tok = args[i] ?? "";
    if (tok === "--") {
      for (let j = i + 1; j < args.length; j++)
        yield {
          index: j,
          problem: msg("spec.args.afterDashes", { arg: args[j] ?? "", engine }),
          fix: msg("spec.args.afterDashesFix"),
        };
      return;
    }
    const c = index.classify(tok);
    if (c.kind === "positional") {
      yield {
        index: i,
        problem: msg("spec.args.positional", { arg: tok, engine }),
        fix: msg("spec.args.positionalFix"),
      };
      continue;
    }
    if (c.kind === "unknown") {
      const near = didYouMean(c.key, spellings);
      yield {
        index: i,
        problem: msg("spec.args.unknown", { flag: c.key, engine }),
        fix:
          near === undefined
            ? msg("spec.args.unknownFix", { prog: table.prog })
            : msg("spec.didYouMean", { guess: near }),
      };
      // The arguments after it are its values to the reader (argparse lists them as unrecognized too).
      while (takes(i + 1)) i++;
      continue;
    }
    if (c.kind === "ambiguous") {
      yield {
        index: i,
        problem: msg("spec.args.ambiguous", { flag: tok, engine, matches: list(c.matches) }),
        fix: msg("spec.args.ambiguousFix"),
      };
      while (takes(i + 1)) i++;
      continue;
    }
    if (c.sel.option.action === "_HelpAction" || c.sel.option.action === "_VersionAction") {
      yield {
        index: i,
        problem: msg(c.sel.option.action === "_HelpAction" ? "spec.args.help" : "spec.args.version", {
          flag: tok,
          engine,
        }),
        fix: msg("spec.removeIt"),
      };
      continue;
    }
    const values = valuesOf(c.sel, tok, args, i, takes);
    const taken = typeof values === "string" ? [] : values.taken;
    const own = rules.owned(c.sel.option);
    const name = canonical(c.sel.option);
    const as =
      tok === name || tok.startsWith(`${name}=`)
        ? name
        : msg("spec.args.readAs", { flag: tok.split("=")[0] ?? tok, engine: table.engine, name });
    if (own !== undefined && !(own.unless !== undefined && taken.length === 1 && own.unless.includes(taken[0] ?? ""))) {
      yield {
        index: i,
        problem: msg("spec.args.owned", { flag: as }),
        fix: msg("spec.args.ownedFix", { why: own.why }),
      };
    } else if (typeof values === "string") {
      yield {
        index: i,
        problem: msg("spec.args.parser", { flag: as, said: values }),
        fix: c.sel.option.nargs === 0 ? msg("spec.args.aloneFix", { name }) : msg("spec.args.valueFix", { name }),
      };
    } else if (c.sel.option.choices !== null && !c.sel.dotted) {
      const bad = values.taken.find((v) => !(c.sel.option.choices ?? []).includes(v));
      if (bad !== undefined)
        yield {
          index: i,
          problem: msg("spec.args.parser", { flag: as, said: `invalid choice: '${bad}'` }),
          fix: msg("spec.useOneOf", { values: list(c.sel.option.choices) }),
        };
    }
    if (typeof values !== "string") i += values.consumed;
  }
}

/** The values an option takes from its token and the tokens after it, or argparse's complaint. */
function valuesOf(
  sel: Selected,
  tok: string,
  args: readonly string[],
  i: number,
  takes: (j: number) => boolean,
): { taken: string[]; consumed: number } | string {
  if (sel.dotted) {
    if (tok.includes("=")) return { taken: [tok.slice(tok.indexOf("=") + 1)], consumed: 0 };
    return i + 1 < args.length ? { taken: [args[i + 1] ?? ""], consumed: 1 } : "expected one argument";
  }
  const { min, max } = wants(sel.option);
  if (sel.explicit !== undefined) {
    if (max === 0) return `ignored explicit argument '${sel.explicit}'`;
    return { taken: [sel.explicit], consumed: 0 };
  }
  const taken: string[] = [];
  if (sel.option.nargs === "...") return { taken: args.slice(i + 1), consumed: args.length - i - 1 };
  while (taken.length < max && takes(i + 1 + taken.length)) taken.push(args[i + 1 + taken.length] ?? "");
  if (taken.length < min) return missing(sel.option);
  return { taken, consumed: taken.length };
}
