/** Recipe rules that the drivers share: which fields an engine takes and needs. */
import type { DeployTarget, EngineName } from "../recipe/types";

/** The recipe fields the drivers' own rules read, as written in the file. */
export interface RecipeFields {
  deploy: DeployTarget;
  port?: number | undefined;
  served_model_name?: string | undefined;
  model?: string | undefined;
  dgpp?: { repo?: string | undefined; rev?: string | undefined } | undefined;
}

/** A problem with a recipe field, found by a driver. */
export interface FieldProblem {
  field: Array<string | number>;
  problem: string;
  fix: string;
}

/** vLLM and SGLang: the recipe names the API port and the model. */
export function servedOnRecipePort(engine: EngineName, r: RecipeFields): FieldProblem[] {
  const out: FieldProblem[] = [];
  if (r.deploy !== "script" && r.port === undefined) out.push({ field: ["port"], problem: "is required for this engine", fix: "add port = 8000 (or another free port)" });
  out.push(...noDgppBlock(engine, r), ...modelNeeded(r));
  return out;
}

/** gr8 and DGPP serve on a port of their own and under the model's repo id. */
export function servedOnFixedPort(engine: EngineName, where: string, r: RecipeFields): FieldProblem[] {
  const out: FieldProblem[] = [];
  if (r.port !== undefined) out.push({ field: ["port"], problem: `${engine} serves its API on a fixed port (${where}), so port is not used`, fix: "remove port" });
  if (r.served_model_name !== undefined) {
    out.push({ field: ["served_model_name"], problem: `${engine} serves the model under its repo id (${r.model ?? "model"}); it takes no served name`, fix: "remove served_model_name" });
  }
  return out;
}

export function noDgppBlock(engine: EngineName, r: RecipeFields): FieldProblem[] {
  return r.dgpp === undefined ? [] : [{ field: ["dgpp"], problem: `a [dgpp] block belongs to engine = "dgpp", not "${engine}"`, fix: "remove the [dgpp] block or set engine = \"dgpp\"" }];
}

export function modelNeeded(r: RecipeFields): FieldProblem[] {
  return r.deploy !== "script" && r.model === undefined ? [{ field: ["model"], problem: "is required", fix: 'add model = "<org>/<name>" (the Hugging Face repo id)' }] : [];
}
