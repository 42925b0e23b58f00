/** A small, strict argument parser: known flags only, clear errors, `--flag value` or `--flag=value`. */

export interface FlagSpec {
  [flag: string]: "bool" | "string" | "number";
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

export function parseArgs(argv: readonly string[], spec: FlagSpec): Parsed {
  const positional: string[] = [];
  const flags: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] ?? "";
    if (a === "--") {
      positional.push(...argv.slice(i + 1));
      break;
    }
    if (!a.startsWith("--")) {
      positional.push(a);
      continue;
    }
    const eq = a.indexOf("=");
    const name = a.slice(2, eq === -1 ? undefined : eq);
    const kind = spec[name];
    if (kind === undefined) throw new UsageError(`unknown option --${name} (known: ${Object.keys(spec).map((k) => `--${k}`).join(", ") || "none"})`);
    if (kind === "bool") {
      if (eq !== -1) throw new UsageError(`--${name} takes no value`);
      flags[name] = true;
      continue;
    }
    const value = eq === -1 ? argv[++i] : a.slice(eq + 1);
    if (value === undefined || (eq === -1 && value.startsWith("--"))) throw new UsageError(`--${name} needs a value`);
    if (kind === "number" && !/^\d+(\.\d+)?$/.test(value)) throw new UsageError(`--${name} needs a number, got "${value}"`);
    flags[name] = value;
  }
  return { positional, flags };
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
