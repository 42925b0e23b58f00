/**
 * The option tables of the engines' real parsers, extracted from the installed packages by
 * scripts/engine-options/extract.py (see its README for the versions and how to refresh them).
 * The JSON files beside this module are the data; this module only gives them a type.
 */
import sglangJson from "./sglang-0.5.23.json";
import vllm0102 from "./vllm-0.10.2.json";
import vllm0111 from "./vllm-0.11.1.json";
import vllm0171 from "./vllm-0.17.1.json";
import vllm0201 from "./vllm-0.20.1.json";
import vllm0310 from "./vllm-0.31.0.json";
import vllm0320 from "./vllm-0.32.0.json";
import vllmJson from "./vllm-0.33.0.json";

/** argparse's nargs: a count (0 for flags), "?", "*", "+" or "..." (REMAINDER). */
export type Nargs = number | "?" | "*" | "+" | "...";

export interface OptionSpec {
  dest: string;
  /** What argparse prints in "argument X: ..." errors, e.g. "--tensor-parallel-size/-tp". */
  name: string;
  /** Every string argparse matches for this option: long, short, aliases, negations. */
  spellings: string[];
  nargs: Nargs;
  choices: string[] | null;
  type: string | null;
  required: boolean;
  action: string;
}

export interface OptionTable {
  engine: string;
  version: string;
  /** The Python the table was extracted with; argparse's matching is the same in 3.11 to 3.13.0. */
  python: string;
  prog: string;
  usage: string;
  allowAbbrev: boolean;
  /** vLLM's FlexibleArgumentParser reads `--a_b` as `--a-b`. */
  underscoresAsDashes: boolean;
  prefixChars: string;
  options: OptionSpec[];
  positionals: Array<{ dest: string; nargs: Nargs; required: boolean }>;
}

function nargsOf(v: unknown, where: string): Nargs {
  if (typeof v === "number" || v === "?" || v === "*" || v === "+" || v === "...") return v;
  throw new Error(`${where}: nargs ${JSON.stringify(v)} is not an argparse nargs`);
}

/** Types the JSON as it is checked: a table that does not have the shape fails at load. */
function asTable(
  json: {
    options: ReadonlyArray<{ nargs: unknown } & Omit<OptionSpec, "nargs">>;
    positionals: ReadonlyArray<{ nargs: unknown; dest: string; required: boolean }>;
  } & Omit<OptionTable, "options" | "positionals">,
): OptionTable {
  const where = `${json.engine} ${json.version} option table`;
  return {
    ...json,
    options: json.options.map((o) => ({
      ...o,
      spellings: [...o.spellings],
      choices: o.choices === null ? null : [...o.choices],
      nargs: nargsOf(o.nargs, `${where}, ${o.name}`),
    })),
    positionals: json.positionals.map((p) => ({ ...p, nargs: nargsOf(p.nargs, `${where}, ${p.dest}`) })),
  };
}

/** Every extracted table, by engine, oldest version first (scripts/engine-options/README.md). */
export const ENGINE_TABLES = {
  vllm: [vllm0102, vllm0111, vllm0171, vllm0201, vllm0310, vllm0320, vllmJson].map(asTable),
  sglang: [asTable(sglangJson)],
} satisfies Record<"vllm" | "sglang", readonly OptionTable[]>;

/** The newest table of each engine: the default where no version is known. */
export const VLLM_OPTIONS: OptionTable = ENGINE_TABLES.vllm[ENGINE_TABLES.vllm.length - 1] as OptionTable;
export const SGLANG_OPTIONS: OptionTable = ENGINE_TABLES.sglang[ENGINE_TABLES.sglang.length - 1] as OptionTable;

/** The canonical spelling of an option: its first long spelling (argparse's own order). */
export function canonical(o: OptionSpec): string {
  return o.name.split("/").find((s) => s.startsWith("--")) ?? o.spellings[0] ?? o.dest;
}
