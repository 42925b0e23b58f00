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

/** The flag named by one of util.parseArgs' messages ("Unknown option '--jsn'", "Option '--node <value>' ..."). */
function flagIn(message: string): string {
  return /'(-{1,2}[^' ]+)/.exec(message)?.[1] ?? "";
}

/** util.parseArgs' error, said as this CLI says it; anything else is not a usage error. */
function usageErrorOf(e: unknown, spec: FlagSpec): UsageError | undefined {
  if (!(e instanceof Error)) return undefined;
  const code = (e as NodeJS.ErrnoException).code;
  const flag = flagIn(e.message);
  const known = Object.keys(spec).map((k) => `--${k}`).join(", ") || t("usage.none");
  if (code === "ERR_PARSE_ARGS_UNKNOWN_OPTION") return new UsageError(t("usage.unknownOption", { flag, known }));
  if (code === "ERR_PARSE_ARGS_INVALID_OPTION_VALUE") {
    return new UsageError(t(/does not take an argument/.test(e.message) ? "usage.noValue" : "usage.needsValue", { flag }));
  }
  return undefined;
}

export function parseArgs(argv: readonly string[], spec: FlagSpec): Parsed {
  const options = Object.fromEntries(Object.entries(spec).map(([name, kind]) => [name, { type: kind === "bool" ? ("boolean" as const) : ("string" as const) }]));
  let parsed: { values: Record<string, string | boolean | undefined>; positionals: string[] };
  try {
    parsed = nodeParseArgs({ args: [...argv], options, strict: true, allowPositionals: true });
  } catch (e) {
    throw usageErrorOf(e, spec) ?? e;
  }
  const flags: Record<string, string | boolean> = {};
  for (const [name, value] of Object.entries(parsed.values)) {
    if (value === undefined) continue;
    if (spec[name] === "number" && (typeof value !== "string" || !NUMBER.test(value))) throw new UsageError(t("usage.needsNumber", { name, value: String(value) }));
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
