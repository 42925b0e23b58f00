/**
 * The value rules of the profile format (seed 001) and `{{name}}` substitution.
 *
 * A rendered value is written as KEY="value" and the node's bash sources the file, so a value must
 * not hold anything that double quotes still expand: `$`, a backtick, a backslash, a double quote.
 * A value without quotes may hold only characters that bash never splits or expands. The same
 * "unquoted" set is the rule for every word of EXTRA_DOCKER_ARGS, which start.sh splices unquoted
 * into a generated bash script.
 */
import { SpecError } from "../recipe/errors";

/** "quoted": the text between double quotes. "unquoted": a bare value or one shell word. */
export type ValueForm = "quoted" | "unquoted";

/** A piece of text and where its first character is in the file (1-based). */
export interface Span {
  text: string;
  line: number;
  col: number;
}

export interface ValueFault {
  index: number;
  problem: string;
  fix: string;
  /** The offending character, when the fault is one character (not a malformed placeholder). */
  char?: string;
}

const UNQUOTED_CHAR = /^[A-Za-z0-9_./:=,@+%-]$/;
const PLACEHOLDER_AT = /^\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}/;
const PLACEHOLDER_ALL = /\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}/g;
const NEVER = "a profile value must not contain $, a backtick, a backslash or a double quote";
const UNQUOTED_FIX =
  "without quotes a value may hold only letters, digits and _ . / : = , @ + % -; put it in double quotes";

const NEVER_CHARS = ["$", "`", "\\", '"', "\r"];
const HERE = "in this place a value may hold only letters, digits and _ . / : = , @ + % -";

export const PLACEHOLDER_FIX = "write a variable as {{name}} (letters, digits and _)";

/** Names a character for a message without echoing anything around it. */
export function describeChar(c: string): string {
  switch (c) {
    case "$":
      return "`$`";
    case "`":
      return "a backtick";
    case "\\":
      return "a backslash";
    case '"':
      return "a double quote";
    case "'":
      return "a single quote";
    case " ":
      return "a space";
    case "\t":
      return "a tab";
    case "\r":
      return "a carriage return";
    default: {
      const code = c.codePointAt(0) ?? 0;
      if (code < 0x20 || code === 0x7f) return `control character U+${code.toString(16).padStart(4, "0")}`;
      if (/\p{Cf}/u.test(c)) return `invisible format character U+${code.toString(16).toUpperCase().padStart(4, "0")}`;
      return `\`${c}\``;
    }
  }
}

/** Why one character breaks the rules of `form`, or undefined when it is fine. */
export function charFault(c: string, form: ValueForm): { problem: string; fix: string } | undefined {
  const code = c.codePointAt(0) ?? 0;
  if (c === "$" || c === "`" || c === "\\" || c === '"') {
    return { problem: `contains ${describeChar(c)}`, fix: `${NEVER}: write the literal value, nothing expands it` };
  }
  if (c === "\r") return { problem: "contains a carriage return", fix: "save the file with LF line endings" };
  if (form === "quoted") {
    if ((code < 0x20 && c !== "\t") || code === 0x7f || /\p{Cf}/u.test(c)) {
      return { problem: `contains ${describeChar(c)}`, fix: "remove it" };
    }
    return undefined;
  }
  if (UNQUOTED_CHAR.test(c)) return undefined;
  if (c === "'") return { problem: "contains a single quote", fix: "single quotes are not part of the profile format; use double quotes" };
  return { problem: `contains ${describeChar(c)} outside double quotes`, fix: UNQUOTED_FIX };
}

/** The first rule broken by `text` (placeholders count as fine), or undefined. */
export function valueFault(text: string, form: ValueForm): ValueFault | undefined {
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("{{", i)) {
      const m = PLACEHOLDER_AT.exec(text.slice(i));
      if (m === null) return { index: i, problem: "has a malformed placeholder", fix: PLACEHOLDER_FIX };
      i += m[0].length;
      continue;
    }
    const c = String.fromCodePoint(text.codePointAt(i) ?? 0);
    const fault = charFault(c, form);
    if (fault !== undefined) return { index: i, char: c, ...fault };
    i += c.length;
  }
  return undefined;
}

/** Where variables in rendered values come from, for messages. */
export interface VarScope {
  vars: Record<string, string>;
  file: string;
  field: string;
  /** Appended to the fix of a bad variable value: where to change it. */
  source: string;
}

/**
 * Replaces every `{{name}}` in `span`; pushes an error for an unknown name or a variable whose value
 * breaks the rules of `form`. Returns the text and the names it used.
 */
export function substitute(
  span: Span,
  form: ValueForm,
  scope: VarScope,
  errors: SpecError[],
): { text: string; used: string[]; ok: boolean } {
  const used: string[] = [];
  let ok = true;
  const text = span.text.replace(PLACEHOLDER_ALL, (whole: string, name: string, offset: number) => {
    const at = { file: scope.file, line: span.line, col: span.col + offset, field: scope.field };
    const value = Object.hasOwn(scope.vars, name) ? scope.vars[name] : undefined;
    if (value === undefined) {
      ok = false;
      const known = Object.keys(scope.vars).sort().map((k) => `{{${k}}}`).join(", ");
      errors.push(
        new SpecError({
          ...at,
          problem: `unknown variable {{${name}}}`,
          fix: `the known variables are ${known === "" ? "(none)" : known}; or define ${name} in ${scope.source}`,
        }),
      );
      return whole;
    }
    used.push(name);
    for (const c of value) {
      const fault = charFault(c, form);
      if (fault === undefined) continue;
      ok = false;
      const rule = form === "unquoted" && !NEVER_CHARS.includes(c) ? HERE : fault.fix;
      errors.push(
        new SpecError({
          ...at,
          problem: `{{${name}}} expands to a value that ${fault.problem}`,
          fix: `${rule}; change the variable ${name} in ${scope.source}`,
        }),
      );
      break;
    }
    return value;
  });
  return { text, used, ok };
}

export function hasPlaceholder(text: string): boolean {
  return /\{\{/.test(text);
}
