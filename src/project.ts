/** The project as the program and the CLI see it: the stack's site, the recipes, the renders. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { SpecError, SpecErrors, throwIfAny } from "./recipe/errors";
import { loadRecipes } from "./recipe/recipe";
import { readSite } from "./recipe/site";
import type { Recipe, Site } from "./recipe/types";
import { siteError } from "./render/checks";
import { renderSite } from "./render/deployment";
import type { DeploymentBundle } from "./render/types";

export interface Project {
  root: string;
  site: Site;
  recipes: Map<string, Recipe>;
  bundles: DeploymentBundle[];
}

export function stackFile(root: string, stack: string): string {
  return join(root, `Pulumi.${stack}.yaml`);
}

export function loadProject(root: string, stack: string): Project {
  const file = stackFile(root, stack);
  if (!existsSync(file)) throw new Error(`no stack config ${file}: create it (see Pulumi.spark-site.yaml) or pick a stack with --stack`);
  // The site and the recipes are independent inputs: report the errors of both at once.
  const errors: SpecError[] = [];
  const attempt = <T>(f: () => T): T | undefined => {
    try {
      return f();
    } catch (e) {
      if (e instanceof SpecError) errors.push(e);
      else if (e instanceof SpecErrors) errors.push(...e.errors);
      else throw e;
      return undefined;
    }
  };
  const site = attempt(() => readSite(file, stack, `Pulumi.${stack}.yaml`));
  const dir = site?.recipesDir ?? "recipes";
  const recipes = attempt(() => {
    if (site !== undefined && !existsSync(join(root, dir))) {
      throw siteError(site, ["recipesDir"], `${dir}/ is not a directory of ${root}`, "create it, or set sm121:recipesDir to the project's directory of *.toml recipes");
    }
    return loadRecipes(join(root, dir), dir);
  });
  throwIfAny(errors);
  if (site === undefined || recipes === undefined) throw new Error("unreachable: no site or recipes without an error");
  const bundles = renderSite(site, recipes, { root });
  return { root, site, recipes, bundles };
}
