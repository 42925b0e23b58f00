/**
 * Errors in operator input (recipes, profiles, overlays, the site). Every one names the file, the
 * line and column, the dotted field, what is wrong and the fix, so that it reads like
 * `recipes/glm53.toml:12:3: tp: 3 does not divide the 4 launch nodes; use 1, 2 or 4`.
 */
export interface SpecErrorInit {
  file: string;
  line: number;
  col: number;
  field: string;
  problem: string;
  fix: string;
}

export class SpecError extends Error {
  readonly file: string;
  readonly line: number;
  readonly col: number;
  readonly field: string;
  readonly problem: string;
  readonly fix: string;

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
  const where = `${e.file}:${e.line}:${e.col}`;
  const field = e.field === "" ? "" : `${e.field}: `;
  return `${where}: ${field}${e.problem}; ${e.fix}`;
}

/** Throws the collected errors, if any: one as itself, several as a SpecErrors. */
export function throwIfAny(errors: SpecError[]): void {
  const [first, ...rest] = errors;
  if (first === undefined) return;
  if (rest.length === 0) throw first;
  throw new SpecErrors(errors);
}
