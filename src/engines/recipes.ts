/**
 * Recipes checked against their engine. recipe/ reads a file (TOML, the schema, the rules across
 * fields that hold for every engine) and knows no driver; here the engine's driver adds its own
 * field rules, and the args are checked against the real parser's option table of the version the
 * recipe or its image names. All of a file's problems are reported at once, and all files' at once.
 */
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { collectErrors, MAX_ERRORS, SpecError, throwIfAny } from "../recipe/errors";
import { dotted, type FieldPath } from "../recipe/locate";
import { readRecipe } from "../recipe/recipe";
import type { Recipe } from "../recipe/types";
import { msg, type Msg } from "../text/messages";
import { driverFor } from ".";
import { tableFor } from "./options/versions";

/** Parses one recipe file's text and checks it against its engine. Throws SpecError or SpecErrors. */
export function parseRecipe(file: string, text: string): Recipe {
  const { recipe, problems } = readRecipe(file, text);
  const errors: SpecError[] = [];
  const err = (path: FieldPath, problem: Msg, fix: Msg) => {
    if (errors.length <= MAX_ERRORS)
      errors.push(new SpecError({ file, ...recipe.locate(path), field: dotted(path), problem, fix }));
  };
  const driver = driverFor(recipe.engine);
  const fields = {
    deploy: recipe.deploy,
    port: recipe.port,
    served_model_name: recipe.servedModelName,
    model: recipe.model,
    dgpp: recipe.dgpp,
  };
  for (const p of driver.recipeProblems(fields)) err(p.field, p.problem, p.fix);
  for (const p of problems) if (errors.length <= MAX_ERRORS) errors.push(p);
  // A script recipe has no args of its own: its profiles' EXTRA_VLLM_ARGS are checked where they are rendered.
  const table =
    recipe.deploy === "script"
      ? undefined
      : tableFor(recipe.engine, { engineVersion: recipe.engineVersion, image: recipe.image, file });
  // The check computes its problems lazily: past the error cap, stop reading (10,000 typos cost nothing).
  let shown = 0;
  for (const p of driver.checkArgs(recipe.args, table?.table)) {
    if (++shown > MAX_ERRORS + 1) break;
    err(["args", p.index], p.problem, p.fix);
  }
  // The file's problems in the order an operator reads the file.
  throwIfAny(errors.sort((x, y) => x.line - y.line || x.col - y.col));
  if (table === undefined) return recipe;
  const warnings = table.warning === undefined ? recipe.warnings : [...recipe.warnings, table.warning];
  return { ...recipe, optionsChecked: table.said, warnings };
}

/** Every `*.toml` of a recipes directory, by name; all errors of all files at once. */
export function loadRecipes(dir: string, display: string = dir): Map<string, Recipe> {
  const out = new Map<string, Recipe>();
  const errors: SpecError[] = [];
  for (const f of readdirSync(dir)
    .filter((n) => n.endsWith(".toml"))
    .sort()) {
    collectErrors(errors, () => {
      const text = readFileSync(join(dir, f), "utf8");
      const r = parseRecipe(join(display, f), text);
      const first = out.get(r.name);
      if (first === undefined) return out.set(r.name, r);
      const problem = msg("spec.recipe.nameTaken", { name: r.name, file: first.file });
      throw new SpecError({
        file: r.file,
        ...r.locate(["name"]),
        field: "name",
        problem,
        fix: msg("spec.recipe.nameTakenFix"),
      });
    });
  }
  throwIfAny(errors);
  return out;
}
