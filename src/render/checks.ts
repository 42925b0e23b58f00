/** Rules across the site and the recipes, checked before anything is rendered or touched. */
import { driverFor } from "../engines";
import { MAX_ERRORS, SpecError } from "../recipe/errors";
import { dotted, type FieldPath } from "../recipe/locate";
import type { Recipe, Site } from "../recipe/types";

export function siteError(site: Site, path: FieldPath, problem: string, fix: string): SpecError {
  return siteErrorsOf(site)(path, problem, fix);
}

/** siteError for many errors of one site (the site's locator parses its files once). */
export function siteErrorsOf(site: Site): (path: FieldPath, problem: string, fix: string) => SpecError {
  return (path, problem, fix) => new SpecError({ ...site.locate(path), field: `sm121:${dotted(path)}`, problem, fix });
}

/** Errors of the deployments against the recipes and each other (not the profiles). */
export function checkDeployments(site: Site, recipes: ReadonlyMap<string, Recipe>): SpecError[] {
  const errors: SpecError[] = [];
  const owner = new Map<string, string>();
  const siteErr = siteErrorsOf(site);
  site.deployments.forEach((d, i) => {
    if (errors.length > MAX_ERRORS) return;
    const recipe = recipes.get(d.recipe);
    if (recipe === undefined) {
      errors.push(siteErr(["deployments", i, "recipe"], `recipe "${d.recipe}" is not in ${site.recipesDir}/`, `use one of ${[...recipes.keys()].join(", ")} or add ${site.recipesDir}/${d.recipe}.toml`));
      return;
    }
    d.nodes.forEach((n, j) => {
      const prev = owner.get(n);
      if (prev !== undefined) errors.push(siteErr(["deployments", i, "nodes", j], `node "${n}" already serves deployment ${prev}; a node serves one deployment`, "remove it from one of the two deployments"));
      owner.set(n, d.name);
    });
    const n = d.nodes.length;
    if (recipe.deploy === "script") {
      if (d.profile === undefined) errors.push(siteErr(["deployments", i], `recipe ${recipe.name} is a script recipe and needs a profile`, `add profile: <name> (a file in ${recipe.profilesDir ?? "its profiles_dir"})`));
    } else {
      if (d.profile !== undefined) errors.push(siteErr(["deployments", i, "profile"], `profiles belong to script recipes; ${recipe.name} is deploy = "${recipe.deploy}"`, "remove profile"));
      if (d.overlay !== undefined) errors.push(siteErr(["deployments", i, "overlay"], "overlays apply to script recipes", "remove overlay"));
      const launch = driverFor(recipe.engine).launchProblem(recipe, n);
      if (launch !== undefined) errors.push(siteErr(["deployments", i, "nodes"], launch.problem, launch.fix));
    }
    for (const [j, nodeName] of d.nodes.entries()) {
      const node = Object.hasOwn(site.nodes, nodeName) ? site.nodes[nodeName] : undefined;
      if (node === undefined) continue;
      if (node.host === "ssh" && node.ssh === undefined) errors.push(siteErr(["deployments", i, "nodes", j], `node ${nodeName} has no ssh block`, "add ssh: {host, user} to the node"));
    }
  });
  return errors;
}
