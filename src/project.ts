/** The project as the program and the CLI see it: the stack's site, the recipes, the renders. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { loadRecipes } from "./recipe/recipe";
import { readSite } from "./recipe/site";
import type { Recipe, Site } from "./recipe/types";
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
  const site = readSite(file, stack, `Pulumi.${stack}.yaml`);
  const recipes = loadRecipes(join(root, site.recipesDir), site.recipesDir);
  const bundles = renderSite(site, recipes, { root });
  return { root, site, recipes, bundles };
}
