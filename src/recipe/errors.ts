/**
 * Errors in operator input (recipes, profiles, overlays, the site). Every one names the file, the
 * line and column, the dotted field, what is wrong and the fix, so that it reads like
 * `recipes/glm53.toml:12:3: tp: 3 does not divide the 4 launch nodes; use 1, 2 or 4`.
 * The problem and the fix are messages (a key and its arguments): the message text is in the
 * locale of the process that made the error.
 */
import { msg, say, type Msg } from "../text/messages";
import { visible } from "../text/visible";

export interface SpecErrorInit {
  file: string;
  line: number;
  col: number;
  field: string;
  problem: Msg;
  fix: Msg;
}

export class SpecError extends Error {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly field: string;
  readonly problem: Msg;
  readonly fix: Msg;

  constructor(init: SpecErrorInit) {
    super(formatSpecError(init));
    this.name = "SpecError";
    this.file = init.file;
    this.line = init.line;
    this.col = init.col;
    this.field = init.field;
    this.problem = init.problem;
    this.fix = init.fix;
  }
}

/** Several input errors at once: validation reports every problem, not only the first. */
export class SpecErrors extends Error {
  readonly errors: SpecError[];

  constructor(errors: SpecError[]) {
    super(errors.map((e) => e.message).join("\n"));
    this.name = "SpecErrors";
    this.errors = errors;
  }
}

export function formatSpecError(e: SpecErrorInit): string {
  // Line 0: a value with no line of its own (from Pulumi's configuration, not a file sm121 reads).
  const where = e.line > 0 ? `${e.file}:${e.line}:${e.col}` : e.file;
  const field = e.field === "" ? "" : `${e.field}: `;
  return printable(`${where}: ${field}${say(msg("spec.problemFix", { problem: e.problem, fix: e.fix }))}`);
}

/**
 * Messages echo what the operator wrote (keys, words, file names). A control or invisible format
 * character in them would reach the terminal (an ESC sequence, a right-to-left override), so it is
 * shown as \uXXXX (text/visible); a message is one line.
 */
export function printable(s: string): string {
  return visible(s, { lines: false });
}

/**
 * At most this many errors are reported at once. Locating an error costs a scan of its file, so a
 * hostile or mangled file (10,000 bad elements) must stop early instead of taking minutes.
 */
export const MAX_ERRORS = 100;

/** The first MAX_ERRORS errors, and one that says there were more, where the next one was. */
export function capErrors(errors: SpecError[]): SpecError[] {
  const next = errors[MAX_ERRORS];
  if (next === undefined) return errors;
  const more = new SpecError({
    file: next.file,
    line: next.line,
    col: next.col,
    field: "",
    problem: msg("spec.tooMany", { count: MAX_ERRORS }),
    fix: msg("spec.tooManyFix"),
  });
  return [...errors.slice(0, MAX_ERRORS), more];
}

/**
 * Runs `fn`; the SpecError or SpecErrors it throws joins `errors` instead, so that independent
 * inputs (files, deployments) report all their errors at once. Anything else is a bug: it goes on.
 */
export function collectErrors<T>(errors: SpecError[], fn: () => T): T | undefined {
  try {
    return fn();
  } catch (e) {
    if (e instanceof SpecError) errors.push(e);
    else if (e instanceof SpecErrors) errors.push(...e.errors);
    else throw e;
    return undefined;
  }
}

/** Throws the collected errors, if any: one as itself, several as a SpecErrors. */
export function throwIfAny(errors: SpecError[]): void {
  const [first, ...rest] = errors;
  if (first === undefined) return;
  if (rest.length === 0) throw first;
  throw new SpecErrors(capErrors(errors));
}
