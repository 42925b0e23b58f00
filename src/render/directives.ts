/**
 * Profile directives: `# sm121-<name>: value` comment lines. sm121 also reads the `pulse-` prefix
 * of seed 001, so that profiles move over unchanged; it writes only `sm121-`.
 */
import { SpecError } from "../recipe/errors";
import { editDistance } from "../text/distance";
import { NAME_PATTERN } from "./keys";
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
  const fail = (c: number, problem: string, fix: string): null => {
    errors.push(new SpecError({ file, line: comment.line, col: c, field, problem, fix }));
    return null;
  };
  const known = DIRECTIVE_NAMES.find((d) => d === name);
  if (known === undefined) {
    const near = suggest(name);
    const list = DIRECTIVE_NAMES.map((d) => `${prefix}-${d}`).join(", ");
    const hint = near === undefined ? "" : `did you mean ${prefix}-${near}? `;
    return fail(col, "is not a directive", `${hint}the directives are ${list}`);
  }
  if (!rest.startsWith(":")) {
    return fail(col + prefix.length + 1 + name.length, "has no colon after its name", `write \`# ${prefix}-${name}: value\``);
  }
  const raw = rest.slice(1);
  const value = raw.trim();
  const valueCol = col + prefix.length + 1 + name.length + 1 + (raw.length - raw.trimStart().length);
  const first = seen.find((d) => d.name === known);
  if (first !== undefined && !REPEATABLE[known]) {
    return fail(col, `occurs a second time (first on line ${first.line})`, "keep one of them");
  }
  const problem = valueProblem(known, value);
  if (problem !== undefined) return fail(valueCol + problem.index, problem.problem, problem.fix);
  return { name: known, prefix, value, line: comment.line, col, valueCol };
}

function valueProblem(name: DirectiveName, value: string): { index: number; problem: string; fix: string } | undefined {
  const unseen = textFault(value);
  if (unseen !== undefined) return unseen;
  if (value === "" && name !== "description") {
    return { index: 0, problem: "has no value", fix: `write \`# sm121-${name}: ${EXAMPLES[name]}\`` };
  }
  switch (name) {
    case "recipe":
      if (NAME_PATTERN.test(value)) return undefined;
      return { index: 0, problem: `\`${value}\` is not a recipe name`, fix: "use letters, digits, . _ and -, as in the site's recipes" };
    case "status":
      if (value === "stable" || value === "experimental") return undefined;
      return { index: 0, problem: `\`${value}\` is not a status`, fix: "use stable or experimental" };
    case "runnable":
      if (value === "true" || value === "false") return undefined;
      return { index: 0, problem: `\`${value}\` is not true or false`, fix: "use true, or false for a render-only profile" };
    case "mkdir": {
      const fault = valueFault(value, "unquoted");
      if (fault !== undefined) return fault;
      if (value.split("/").includes("..")) return { index: value.indexOf(".."), problem: `\`${value}\` has a ".." segment`, fix: "give the directory without .." };
      if (value.startsWith("/") || value.startsWith("{{")) return undefined;
      return { index: 0, problem: `\`${value}\` is not an absolute path`, fix: "give an absolute path on the node, or start with a {{variable}}" };
    }
    case "description":
    case "proof":
    case "client":
      return textFault(value);
  }
}

/** Free text (descriptions, proofs, client notes) may hold anything but control characters. */
function textFault(value: string): { index: number; problem: string; fix: string } | undefined {
  let index = 0;
  for (const c of value) {
    if ((c.codePointAt(0) ?? 0) < 0x20 || c === "\u007f" || /\p{Cf}/u.test(c)) return { index, problem: `contains ${describeChar(c)}`, fix: "remove it" };
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
