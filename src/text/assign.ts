/**
 * One way to write a value into a file that a shell sources, and one way to read it back.
 *
 * Written: `KEY="value"` when the value fits seed 001's double-quoted form (no `$`, backtick,
 * backslash, double quote or line break), else `KEY='value'` with each `'` written as `'\''`.
 * Bash reads either as the literal value: a start.sh that sources the file runs nothing of it.
 *
 * Read back on the node by `sm121_get FILE KEY` (ASSIGNMENT_READER, bash; no eval, no source):
 * the last `KEY=` line (an `export ` before it is allowed), undoing exactly those two quotings,
 * or a bare value of the unquoted profile subset. Any other form (one a shell would expand) is
 * not read: the function says so instead of guessing. A value is one line: the plan refuses a
 * secret with a line break (render/secrets).
 */

/** Seed 001's double-quoted form: nothing inside that double quotes would still expand. */
const DOUBLE_QUOTED = /^[^$`\\"\n\r]*$/;

/** The assignment line for `key` (no trailing newline). */
export function assignment(key: string, value: string): string {
  return DOUBLE_QUOTED.test(value) ? `${key}="${value}"` : `${key}='${value.replace(/'/g, `'\\''`)}'`;
}

/**
 * Bash: defines `sm121_get FILE KEY`, which sets REPLY to the value of the last KEY= line and
 * returns 0; 1 when the file has no such line (or no file); 2 when that line is in no form it
 * reads (REPLY empty). The `'\''` pairs are removed before the check for a stray quote.
 */
export const ASSIGNMENT_READER = [
  "sm121_get() {",
  `  local l v t q="'" r=1; REPLY=`,
  '  [ -f "$1" ] || return 1',
  '  while IFS= read -r l || [ -n "$l" ]; do',
  '    case $l in "$2="*|"export $2="*) v=${l#*"$2="};; *) continue;; esac',
  `    if [ "\${#v}" -ge 2 ] && [ "\${v:0:1}" = "$q" ] && [ "\${v: -1}" = "$q" ]; then`,
  `      v=\${v:1:\${#v}-2}; t=\${v//"'\\\\''"/}`,
  `      case $t in *"$q"*) REPLY=; r=2;; *) REPLY=\${v//"'\\\\''"/"$q"}; r=0;; esac`,
  `    elif [ "\${#v}" -ge 2 ] && [ "\${v:0:1}" = '"' ] && [ "\${v: -1}" = '"' ]; then`,
  "      v=${v:1:${#v}-2}",
  '      case $v in *[\\"\\$\\`\\\\]*) REPLY=; r=2;; *) REPLY=$v; r=0;; esac',
  "    elif [[ $v =~ ^[A-Za-z0-9_./:=,@+%-]*$ ]]; then REPLY=$v; r=0",
  "    else REPLY=; r=2; fi",
  '  done < "$1"',
  '  return "$r"',
  "}",
].join("\n");
