/**
 * The one quoting function that every generated shell line goes through, and the path rule for
 * node paths. Recipe text never reaches a script unquoted. It lives below both targets/ (which
 * writes the launch scripts) and remote/ (which writes the lock script): transport knows no target.
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

/** Bash: the node's clock in seconds, with no fork from bash 5 on (EPOCHSECONDS); `date` before. */
export const NOW_S = "${EPOCHSECONDS:-$(date +%s)}";

/**
 * Bash: sets `v` to the node's clock in ms, with no fork from bash 5 on (EPOCHREALTIME: seconds
 * and microseconds, with the locale's decimal mark); `date` before.
 */
export function nowMs(v: string): string {
  return `${v}=\${EPOCHREALTIME:-$(date +%s.%6N)}; ${v}=$(( \${${v}//[!0-9]/} / 1000 ))`;
}

/**
 * A command substitution: the last line `cmd` writes to stderr, without quotes, backslashes or
 * control characters (it may go into a JSON string); empty when there is none.
 */
export function lastErrorLine(cmd: string): string {
  return `$(${cmd} 2>&1 >/dev/null | tail -n 1 | tr -d '"\\\\[:cntrl:]' || true)`;
}

// A private-use character: messages carry it through their arguments, which make controls visible.
const EXPANDS = "\ue000";

/**
 * A message argument that a node script expands when it prints the message: `shellValue("$d")`,
 * `shellValue("$((avail / 1048576))")`. The message is said here, in this process's locale, and
 * `shellWords` makes it one shell word.
 */
export function shellValue(expansion: string): string {
  return `${EXPANDS}${expansion}${EXPANDS}`;
}

/**
 * A text with shellValue arguments as one double-quoted shell word: its own characters escaped
 * (backslash, double quote, dollar, backquote), each expansion left to expand.
 */
export function shellWords(text: string): string {
  const parts = text.split(EXPANDS).map((p, i) => (i % 2 === 1 ? p : p.replace(/[\\"$`]/g, "\\$&")));
  return `"${parts.join("")}"`;
}
