/**
 * Command-line parsing through Node's own `util.parseArgs` in strict mode: known flags only,
 * `--flag value` or `--flag=value`, `--` ends the flags. Its errors become UsageErrors that name
 * the flag; the caller adds the verb's usage.
 */
import { parseArgs as nodeParseArgs } from "node:util";
import { t } from "../text/messages";

export type FlagKind = "bool" | "string" | "number";

export interface FlagSpec {
  [flag: string]: FlagKind;
}

export interface Parsed {
  positional: string[];
  flags: Record<string, string | boolean>;
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "UsageError";
  }
}

const NUMBER = /^\d+(\.\d+)?$/;

type ParseOptions = Record<string, { type: "boolean" | "string" }>;

/**
 * util.parseArgs' refusal, said as this CLI says it, from the tokens (not its message's words):
 * the first option the spec does not know, a switch given a value, or a flag without one.
 */
function usageErrorOf(
  e: unknown,
  argv: readonly string[],
  spec: FlagSpec,
  options: ParseOptions,
): UsageError | undefined {
  const code = e instanceof Error ? (e as NodeJS.ErrnoException).code : undefined;
  if (code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION" && code !== "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") return undefined;
  const known =
    Object.keys(spec)
      .map((k) => `--${k}`)
      .join(", ") || t("usage.none");
  const { tokens } = nodeParseArgs({ args: [...argv], options, strict: false, allowPositionals: true, tokens: true });
  for (const tok of tokens) {
    if (tok.kind !== "option") continue;
    const kind = spec[tok.name];
    if (kind === undefined) return new UsageError(t("usage.unknownOption", { flag: tok.rawName, known }));
    if (kind === "bool" && tok.inlineValue === true) return new UsageError(t("usage.noValue", { flag: tok.rawName }));
    if (kind !== "bool" && tok.value === undefined) return new UsageError(t("usage.needsValue", { flag: tok.rawName }));
  }
  // A value that looks like an option (`--node --json`): strict parsing asks for `--node=<value>`.
  const flag = tokens.find((tok) => tok.kind === "option" && spec[tok.name] !== "bool");
  return new UsageError(t("usage.needsValue", { flag: flag?.kind === "option" ? flag.rawName : "--" }));
}

export function parseArgs(argv: readonly string[], spec: FlagSpec): Parsed {
  const options: ParseOptions = Object.fromEntries(
    Object.entries(spec).map(([name, kind]) => [name, { type: kind === "bool" ? "boolean" : "string" }]),
  );
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = nodeParseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (e) {
    throw usageErrorOf(e, argv, spec, options) ?? e;
  }
  const flags: Record<string, string | boolean> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === undefined) continue;
    if (spec[name] === "number" && (typeof value !== "string" || !NUMBER.test(value)))
      throw new UsageError(t("usage.needsNumber", { name, value: String(value) }));
    flags[name] = value;
  }
  return { positional: parsed.positionals, flags };
}

export function str(p: Parsed, name: string): string | undefined {
  const v = p.flags[name];
  return typeof v === "string" ? v : undefined;
}

export function num(p: Parsed, name: string, fallback: number): number {
  const v = str(p, name);
  return v === undefined ? fallback : Number(v);
}

export function bool(p: Parsed, name: string): boolean {
  return p.flags[name] === true;
}
