/**
 * What an engine would store from a recipe's `args`, read the way the engine reads them: through
 * the option table of the engine's version (the recipe's `engine_version` or its image's, as the
 * args check chooses it), so an abbreviation (`--revis abc`), `--flag=value` and the last of
 * several count as the engine counts them. An engine without an extracted table (gr8, DGPP) is
 * read as sm121 checks its owned flags: the spelling as written, or `--flag=value`.
 */
import type { Recipe } from "../../recipe/types";
import { optionAt } from "./values";
import { tableFor } from "./versions";

type RecipeArgs = Pick<Recipe, "engine" | "args" | "engineVersion" | "image" | "file">;

/** The value the engine stores for option `dest` (spelled `spelling` where there is no table). */
export function recipeOption(recipe: RecipeArgs, dest: string, spelling: string): string | undefined {
  const { engine, engineVersion, image, file } = recipe;
  const table = tableFor(engine, { engineVersion, image, file })?.table;
  if (table !== undefined) return optionAt(table, recipe.args, dest)?.value;
  let found: string | undefined;
  recipe.args.forEach((a, i) => {
    if (a === spelling) found = recipe.args[i + 1] ?? found;
    else if (a.startsWith(`${spelling}=`)) found = a.slice(spelling.length + 1);
  });
  return found;
}

/** The model revision the engine loads (`--revision`); undefined: the hub's default branch. */
export function recipeRevision(recipe: RecipeArgs): string | undefined {
  return recipeOption(recipe, "revision", "--revision");
}

/**
 * The seconds vLLM finishes what runs once told to stop, answering anything new with an error
 * (`--shutdown-timeout`, vLLM 0.20 on; a version whose table lacks it reads none); 0: it aborts what
 * runs, as SGLang, gr8 and DGPP do.
 */
export function recipeShutdownS(recipe: RecipeArgs): number {
  if (recipe.engine !== "vllm") return 0;
  const s = Number(recipeOption(recipe, "shutdown_timeout", "--shutdown-timeout") ?? "0");
  return Number.isFinite(s) && s > 0 ? s : 0;
}
