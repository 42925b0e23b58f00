/**
 * Every profile in the repository, deployed or not: the `*.env` files of each script recipe's
 * profiles directory, each parsed with the profile parser the render uses, its errors kept beside
 * it. `sm121 profiles` lists them; `sm121 validate` reports their errors.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { SpecError, SpecErrors } from "../recipe/errors";
import type { Recipe, Site } from "../recipe/types";
import { readProfileFile, type Profile } from "../render/profile";
import { profilesDirOf } from "../render/script";

export interface ProfileFile {
  recipe: string;
  name: string;
  /** The path shown in messages, relative to the project. */
  file: string;
  profile?: Profile;
  errors: SpecError[];
}

export interface RecipeProfiles {
  recipe: string;
  /** The profiles directory, relative to the project. */
  dir: string;
  profiles: ProfileFile[];
}

export function specErrorsOf(e: unknown): SpecError[] | undefined {
  if (e instanceof SpecErrors) return e.errors;
  if (e instanceof SpecError) return [e];
  return undefined;
}

function readOne(root: string, recipe: string, file: string): ProfileFile {
  const name = file.replace(/^.*\//, "").replace(/\.env$/, "");
  try {
    return { recipe, name, file, profile: readProfileFile(join(root, file), file), errors: [] };
  } catch (e) {
    const errors = specErrorsOf(e);
    if (errors === undefined) throw e;
    return { recipe, name, file, errors };
  }
}

/** The profiles of every script recipe (or of `only`), sorted by recipe and name. */
export function repoProfiles(
  root: string,
  site: Pick<Site, "recipesDir">,
  recipes: ReadonlyMap<string, Recipe>,
  only?: string,
): RecipeProfiles[] {
  return [...recipes.values()]
    .filter((r) => r.deploy === "script" && (only === undefined || r.name === only))
    .sort((a, b) => a.name.localeCompare(b.name))
    .map((r) => {
      const dir = profilesDirOf(site.recipesDir, r);
      const files = existsSync(join(root, dir))
        ? readdirSync(join(root, dir))
            .filter((f) => f.endsWith(".env"))
            .sort()
        : [];
      return { recipe: r.name, dir, profiles: files.map((f) => readOne(root, r.name, join(dir, f))) };
    });
}
