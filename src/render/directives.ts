/**
 * Profile directives: `# sm121-<name>: value` comment lines. sm121 also reads the `pulse-` prefix
 * of seed 001, so that profiles move over unchanged; it writes only `sm121-`.
 */
import { SpecError } from "../recipe/errors";
import { editDistance } from "../text/distance";
import { NAME_PATTERN } from "./keys";
import { msg, type Msg } from "../text/messages";
import { describeChar, Span, valueFault } from "./values";

export const DIRECTIVE_NAMES = ["recipe", "status", "runnable", "description", "mkdir", "proof", "client"] as const;
export type DirectiveName = (typeof DIRECTIVE_NAMES)[number];
export const DIRECTIVE_PREFIXES = ["sm121", "pulse"] as const;
export type DirectivePrefix = (typeof DIRECTIVE_PREFIXES)[number];

/** Directives that may occur more than once; the others occur at most once. */
const REPEATABLE: Record<DirectiveName, boolean> = {
  recipe: false,
  status: false,
  runnable: false,
  description: false,
  mkdir: true,
  proof: true,
  client: true,
};

/** One directive line as written. */
export interface ProfileDirective {
  name: DirectiveName;
  prefix: DirectivePrefix;
  value: string;
  line: number;
  /** Column of the prefix. */
  col: number;
  /** Column of the value. */
  valueCol: number;
}

/** Matches a comment that claims a directive; group 1 prefix, 2 name, 3 the rest. */
// [\s\S], not `.`: a carriage return inside the line must not turn the directive into a plain comment.
const DIRECTIVE_LINE = /^(#[ \t]*)(sm121|pulse)-([A-Za-z0-9_-]*)([\s\S]*)$/;

/**
 * Reads one comment line. Returns undefined for a plain comment, the directive when it is valid,
 * and null when it pushed an error.
 */
export function readDirective(
  file: string,
  comment: Span,
  seen: ProfileDirective[],
  errors: SpecError[],
): ProfileDirective | undefined | null {
  const m = DIRECTIVE_LINE.exec(comment.text);
  if (m === null) return undefined;
  const [, hash = "", prefixText = "", name = "", rest = ""] = m;
  const prefix = prefixText === "pulse" ? "pulse" : "sm121";
  const col = comment.col + hash.length;
  const field = `directive ${prefix}-${name}`;
  const fail = (c: number, problem: Msg, fix: Msg): null => {
    errors.push(new SpecError({ file, line: comment.line, col: c, field, problem, fix }));
    return null;
  };
  const known = DIRECTIVE_NAMES.find((d) => d === name);
  if (known === undefined) {
    const near = suggest(name);
    const list = DIRECTIVE_NAMES.map((d) => `${prefix}-${d}`).join(", ");
    const fix =
      near === undefined
        ? msg("spec.directive.listFix", { list })
        : msg("spec.directive.nearFix", { near: `${prefix}-${near}`, list });
    return fail(col, msg("spec.directive.unknown"), fix);
  }
  if (!rest.startsWith(":")) {
    return fail(
      col + prefix.length + 1 + name.length,
      msg("spec.directive.noColon"),
      msg("spec.directive.noColonFix", { directive: `${prefix}-${name}` }),
    );
  }
  const raw = rest.slice(1);
  const value = raw.trim();
  const valueCol = col + prefix.length + 1 + name.length + 1 + (raw.length - raw.trimStart().length);
  const first = seen.find((d) => d.name === known);
  if (first !== undefined && !REPEATABLE[known]) {
    return fail(col, msg("spec.profile.twice", { line: first.line }), msg("spec.directive.twiceFix"));
  }
  const problem = valueProblem(known, value);
  if (problem !== undefined) return fail(valueCol + problem.index, problem.problem, problem.fix);
  return { name: known, prefix, value, line: comment.line, col, valueCol };
}

function valueProblem(name: DirectiveName, value: string): { index: number; problem: Msg; fix: Msg } | undefined {
  const unseen = textFault(value);
  if (unseen !== undefined) return unseen;
  if (value === "" && name !== "description") {
    return {
      index: 0,
      problem: msg("spec.directive.noValue"),
      fix: msg("spec.directive.noValueFix", { line: `# sm121-${name}: ${EXAMPLES[name]}` }),
    };
  }
  switch (name) {
    case "recipe":
      if (NAME_PATTERN.test(value)) return undefined;
      return { index: 0, problem: msg("spec.directive.recipe", { value }), fix: msg("spec.directive.recipeFix") };
    case "status":
      if (value === "stable" || value === "experimental") return undefined;
      return { index: 0, problem: msg("spec.directive.status", { value }), fix: msg("spec.directive.statusFix") };
    case "runnable":
      if (value === "true" || value === "false") return undefined;
      return { index: 0, problem: msg("spec.directive.bool", { value }), fix: msg("spec.directive.boolFix") };
    case "mkdir": {
      const fault = valueFault(value, "unquoted");
      if (fault !== undefined) return fault;
      if (value.split("/").includes(".."))
        return {
          index: value.indexOf(".."),
          problem: msg("spec.directive.dotDot", { value }),
          fix: msg("spec.directive.dotDotFix"),
        };
      if (value.startsWith("/") || value.startsWith("{{")) return undefined;
      return { index: 0, problem: msg("spec.directive.relative", { value }), fix: msg("spec.directive.relativeFix") };
    }
    case "description":
    case "proof":
    case "client":
      return textFault(value);
  }
}

/** Free text (descriptions, proofs, client notes) may hold anything but control characters. */
function textFault(value: string): { index: number; problem: Msg; fix: Msg } | undefined {
  let index = 0;
  for (const c of value) {
    if ((c.codePointAt(0) ?? 0) < 0x20 || c === "\u007f" || /\p{Cf}/u.test(c))
      return { index, problem: msg("spec.value.contains", { char: describeChar(c) }), fix: msg("spec.removeIt") };
    index += c.length;
  }
  return undefined;
}

const EXAMPLES: Record<DirectiveName, string> = {
  recipe: "qwen38-flash",
  status: "stable",
  runnable: "false",
  description: "one line",
  mkdir: "{{tritonCache}}",
  proof: "text that the container log must show",
  client: "a note for clients",
};

/** The closest directive name within edit distance 2, or a known name that `name` contains. */
export function suggest(name: string): DirectiveName | undefined {
  let best: DirectiveName | undefined;
  let bestDistance = 3;
  for (const d of DIRECTIVE_NAMES) {
    const distance = editDistance(name.toLowerCase(), d);
    if (distance < bestDistance) {
      best = d;
      bestDistance = distance;
    }
  }
  return best ?? DIRECTIVE_NAMES.find((d) => name.toLowerCase().includes(d));
}
