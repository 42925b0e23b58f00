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
import { msg, type Msg } from "../text/messages";

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
  problem: Msg;
  fix: Msg;
  /** The offending character, when the fault is one character (not a malformed placeholder). */
  char?: string;
}

const UNQUOTED_CHAR = /^[A-Za-z0-9_./:=,@+%-]$/;
const PLACEHOLDER_AT = /^\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}/;
const PLACEHOLDER_ALL = /\{\{([A-Za-z_][A-Za-z0-9_]*)\}\}/g;

const NEVER_CHARS = ["$", "`", "\\", '"', "\r"];
const HERE = msg("spec.value.here");

export const PLACEHOLDER_FIX = msg("spec.value.placeholderFix");

/** Names a character for a message without echoing anything around it. */
export function describeChar(c: string): Msg {
  switch (c) {
    case "$":
      return msg("spec.char.quoted", { char: "$" });
    case "`":
      return msg("spec.char.backtick");
    case "\\":
      return msg("spec.char.backslash");
    case '"':
      return msg("spec.char.doubleQuote");
    case "'":
      return msg("spec.char.singleQuote");
    case " ":
      return msg("spec.char.space");
    case "\t":
      return msg("spec.char.tab");
    case "\r":
      return msg("spec.char.cr");
    default: {
      const code = c.codePointAt(0) ?? 0;
      if (code < 0x20 || code === 0x7f) return msg("spec.char.control", { code: code.toString(16).padStart(4, "0") });
      if (/\p{Cf}/u.test(c)) return msg("spec.char.format", { code: code.toString(16).toUpperCase().padStart(4, "0") });
      return msg("spec.char.quoted", { char: c });
    }
  }
}

/** Why one character breaks the rules of `form`, or undefined when it is fine. */
export function charFault(c: string, form: ValueForm): { problem: Msg; fix: Msg } | undefined {
  const code = c.codePointAt(0) ?? 0;
  const contains = msg("spec.value.contains", { char: describeChar(c) });
  if (c === "$" || c === "`" || c === "\\" || c === '"') return { problem: contains, fix: msg("spec.value.neverFix") };
  if (c === "\r") return { problem: contains, fix: msg("spec.value.crFix") };
  if (form === "quoted") {
    const unseen = (code < 0x20 && c !== "\t") || code === 0x7f || /\p{Cf}/u.test(c);
    if (unseen) return { problem: contains, fix: msg("spec.removeIt") };
    return undefined;
  }
  if (UNQUOTED_CHAR.test(c)) return undefined;
  if (c === "'") return { problem: contains, fix: msg("spec.value.singleQuoteFix") };
  return { problem: msg("spec.value.outsideQuotes", { char: describeChar(c) }), fix: msg("spec.value.unquotedFix") };
}

/** The first rule broken by `text` (placeholders count as fine), or undefined. */
export function valueFault(text: string, form: ValueForm): ValueFault | undefined {
  let i = 0;
  while (i < text.length) {
    if (text.startsWith("{{", i)) {
      const m = PLACEHOLDER_AT.exec(text.slice(i));
      if (m === null) return { index: i, problem: msg("spec.value.badPlaceholder"), fix: PLACEHOLDER_FIX };
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
  source: Msg;
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
      const known = Object.keys(scope.vars)
        .sort()
        .map((k) => `{{${k}}}`)
        .join(", ");
      errors.push(
        new SpecError({
          ...at,
          problem: msg("spec.value.unknownVar", { name }),
          fix: msg("spec.value.unknownVarFix", {
            known: known === "" ? msg("spec.none") : known,
            name,
            source: scope.source,
          }),
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
          problem: msg("spec.value.expands", { name, problem: fault.problem }),
          fix: msg("spec.value.expandsFix", { rule, name, source: scope.source }),
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
