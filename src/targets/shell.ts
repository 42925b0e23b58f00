/**
 * The one quoting function that every generated shell line goes through, and the path rule for
 * node paths. Recipe text never reaches a script unquoted.
 */

const PLAIN = /^[A-Za-z0-9_./:=,@+%-]+$/;

/** A single shell word for `s`: as is when it is plainly safe, else single-quoted. */
export function quote(s: string): string {
  if (s !== "" && PLAIN.test(s) && !s.startsWith("-") && !s.startsWith("~")) return s;
  if (s !== "" && PLAIN.test(s)) return `'${s}'`;
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** An argv as one shell line. A leading-dash word is fine here: it is an argument, not a command. */
export function quoteArgv(argv: readonly string[]): string {
  return argv.map((a) => (a !== "" && PLAIN.test(a) && !a.startsWith("~") ? a : quote(a))).join(" ");
}

/**
 * A node path as a shell word: `~/x` becomes `"$HOME"/'x'` so that the node's own $HOME is used
 * (the login shell never parses our scripts, so `~` would not expand by itself).
 */
export function nodePath(p: string): string {
  if (p === "~") return `"$HOME"`;
  if (p.startsWith("~/")) return `"$HOME"/${quote(p.slice(2))}`;
  return quote(p);
}

/** Joins node paths (`~/a` + `b` = `~/a/b`). */
export function joinNode(dir: string, ...parts: string[]): string {
  return [dir.replace(/\/+$/, ""), ...parts].join("/");
}

/** Identifiers that become container, session and file names. */
export const IDENTIFIER = /^[a-z0-9][a-z0-9-]{0,95}$/;

export function assertIdentifier(kind: string, s: string): string {
  if (!IDENTIFIER.test(s)) throw new Error(`${kind} "${s}" is not a valid identifier (lower-case letters, digits and -)`);
  return s;
}

/** An env file that bash can source and docker can read with --env-file: KEY=value, one per line. */
export function envFileText(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}\n`)
    .join("");
}
