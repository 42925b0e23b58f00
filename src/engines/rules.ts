/** Recipe rules that the drivers share: which fields an engine takes and needs. */
import type { DeployTarget, EngineName } from "../recipe/types";
import { msg, type Msg } from "../text/messages";

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
  problem: Msg;
  fix: Msg;
}

/** vLLM and SGLang: the recipe names the API port and the model. */
export function servedOnRecipePort(engine: EngineName, r: RecipeFields): FieldProblem[] {
  const out: FieldProblem[] = [];
  if (r.deploy !== "script" && r.port === undefined)
    out.push({ field: ["port"], problem: msg("spec.rules.portRequired"), fix: msg("spec.rules.portRequiredFix") });
  out.push(...noDgppBlock(engine, r), ...modelNeeded(r));
  return out;
}

/** gr8 and DGPP serve on a port of their own and under the model's repo id. */
export function servedOnFixedPort(engine: EngineName, where: string | Msg, r: RecipeFields): FieldProblem[] {
  const out: FieldProblem[] = [];
  if (r.port !== undefined)
    out.push({
      field: ["port"],
      problem: msg("spec.rules.fixedPort", { engine, where }),
      fix: msg("spec.removeField", { field: "port" }),
    });
  if (r.served_model_name !== undefined) {
    out.push({
      field: ["served_model_name"],
      problem: msg("spec.rules.noServedName", { engine, model: r.model ?? "model" }),
      fix: msg("spec.removeField", { field: "served_model_name" }),
    });
  }
  return out;
}

export function noDgppBlock(engine: EngineName, r: RecipeFields): FieldProblem[] {
  return r.dgpp === undefined
    ? []
    : [{ field: ["dgpp"], problem: msg("spec.rules.dgppBlock", { engine }), fix: msg("spec.rules.dgppBlockFix") }];
}

export function modelNeeded(r: RecipeFields): FieldProblem[] {
  return r.deploy !== "script" && r.model === undefined
    ? [{ field: ["model"], problem: msg("spec.required"), fix: msg("spec.rules.modelFix") }]
    : [];
}
