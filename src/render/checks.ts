/** Rules across the site and the recipes, checked before anything is rendered or touched. */
import { driverFor, endpointKey } from "../engines";
import { MAX_ERRORS, SpecError } from "../recipe/errors";
import { tableFor } from "../engines/options/versions";
import { dotted, type FieldPath } from "../recipe/locate";
import type { Deployment, Recipe, Site } from "../recipe/types";
import { msg, type Msg } from "../text/messages";
import type { DeploymentBundle } from "./types";

export function siteError(site: Site, path: FieldPath, problem: Msg, fix: Msg): SpecError {
  return siteErrorsOf(site)(path, problem, fix);
}

/** siteError for many errors of one site (the site's locator parses its files once). */
export function siteErrorsOf(site: Site): (path: FieldPath, problem: Msg, fix: Msg) => SpecError {
  return (path, problem, fix) => new SpecError({ ...site.locate(path), field: `sm121:${dotted(path)}`, problem, fix });
}

/** Where the site declares a deployment (a `replicas:` group is one entry's node group). */
function placesOf(d: Deployment, i: number): { entry: FieldPath; nodes: FieldPath } {
  return d.at ?? { entry: ["deployments", i], nodes: ["deployments", i, "nodes"] };
}

/** Errors of the deployments against the recipes and each other (not the profiles). */
export function checkDeployments(site: Site, recipes: ReadonlyMap<string, Recipe>): SpecError[] {
  const errors: SpecError[] = [];
  const owner = new Map<string, { name: string; recipe: Recipe; nodes: number }>();
  const siteErr = siteErrorsOf(site);
  site.deployments.forEach((d, i) => {
    if (errors.length > MAX_ERRORS) return;
    const { entry, nodes: nodesAt } = placesOf(d, i);
    const recipe = recipes.get(d.recipe);
    if (recipe === undefined) {
      const file = `${site.recipesDir}/${d.recipe}.toml`;
      const fix = msg("spec.check.unknownRecipeFix", { recipes: [...recipes.keys()].join(", "), file });
      const problem = msg("spec.check.unknownRecipe", { recipe: d.recipe, dir: `${site.recipesDir}/` });
      errors.push(siteErr([...entry, "recipe"], problem, fix));
      return;
    }
    if (site.requireApiKey && endpointKey(recipe) === "none") {
      const problem = msg("spec.check.takesNoKey", { deployment: d.name, engine: recipe.engine });
      errors.push(siteErr([...entry, "recipe"], problem, msg("spec.check.takesNoKeyFix", { deployment: d.name })));
    }
    d.nodes.forEach((n, j) => {
      const prev = owner.get(n);
      // A node may serve several deployments, each of them on that node alone (their ranks would
      // meet on fixed ports) and each with its own node recipe (one dir, one container).
      if (prev !== undefined) {
        const shared = [prev, { name: d.name, recipe, nodes: d.nodes.length }];
        const multi = shared.find((x) => x.nodes > 1);
        const script = shared.every((x) => x.recipe.deploy === "script" && x.recipe.name === recipe.name);
        const dgpp = shared.find((x) => x.recipe.engine === "dgpp");
        const at = [...nodesAt, j];
        const also = { node: n, other: prev.name };
        const remove = msg("spec.check.removeNode", { node: n });
        if (multi !== undefined) {
          const problem = msg("spec.check.sharedMulti", { ...also, deployment: multi.name, count: multi.nodes });
          errors.push(siteErr(at, problem, msg("spec.check.sharedMultiFix", { deployment: multi.name, node: n })));
        } else if (dgpp !== undefined) {
          errors.push(siteErr(at, msg("spec.check.sharedDgpp", { ...also, deployment: dgpp.name }), remove));
        } else if (script) {
          errors.push(siteErr(at, msg("spec.check.sharedScript", { ...also, recipe: recipe.name }), remove));
        }
      } else owner.set(n, { name: d.name, recipe, nodes: d.nodes.length });
    });
    if (recipe.deploy === "script") {
      const addProfile = msg("spec.check.addProfile", { dir: recipe.profilesDir ?? "profiles_dir" });
      if (d.profile === undefined) {
        errors.push(siteErr(entry, msg("spec.check.needsProfile", { recipe: recipe.name }), addProfile));
      }
    } else {
      const notScript = msg("spec.check.notScript", { recipe: recipe.name, deploy: recipe.deploy });
      const remove = (field: string) => msg("spec.removeField", { field });
      if (d.profile !== undefined) errors.push(siteErr([...entry, "profile"], notScript, remove("profile")));
      const overlay = msg("spec.check.overlay");
      if (d.overlay !== undefined) errors.push(siteErr([...entry, "overlay"], overlay, remove("overlay")));
      const launch = launchOf(site, d, recipe);
      if (launch !== undefined) errors.push(launch);
    }
    for (const [j, nodeName] of d.nodes.entries()) {
      const node = Object.hasOwn(site.nodes, nodeName) ? site.nodes[nodeName] : undefined;
      if (node === undefined) continue;
      if (node.host === "ssh" && node.ssh === undefined) {
        errors.push(siteErr([...nodesAt, j], msg("spec.check.noSsh", { node: nodeName }), msg("spec.check.noSshFix")));
      }
    }
  });
  return errors;
}

/**
 * The engine's launch rules over the deployment's layout (its nodes and their GPUs), before any
 * node is touched. A rule about a recipe field points at the field's line in the recipe and names
 * the deployment; a rule about the nodes points at the deployment's nodes in the site.
 */
function launchOf(site: Site, d: Deployment, recipe: Recipe): SpecError | undefined {
  const { entry, nodes: nodesAt } = placesOf(d, site.deployments.indexOf(d));
  const nodeOf = (n: string) => (Object.hasOwn(site.nodes, n) ? site.nodes[n] : undefined);
  const nodes = d.nodes.map(nodeOf).filter((n) => n !== undefined);
  const gpus = [...new Set(nodes.map((n) => n.gpus))];
  if (gpus.length > 1) {
    const each = nodes.map((n) => `${n.name} ${n.gpus}`).join(", ");
    const problem = msg("spec.check.gpusDiffer", { deployment: d.name, each });
    return siteError(site, nodesAt, problem, msg("spec.check.gpusDifferFix"));
  }
  const table = tableFor(recipe.engine, recipe)?.table;
  const driver = driverFor(recipe.engine);
  const layout = { nodes: d.nodes.length, gpusPerNode: gpus[0] ?? 1, ...(table && { table }) };
  if (driver.launchProblem(recipe, layout) === undefined) return undefined;
  // Only a problem names where the site declares the deployment (placing it parses the site's files): the
  // driver words it again with that place.
  const at = site.locate(entry);
  const where = at.line > 0 ? `${at.file}:${at.line}` : at.file;
  const deployment = msg("spec.check.deploymentAt", { deployment: d.name, at: where });
  const p = driver.launchProblem(recipe, { ...layout, deployment });
  if (p === undefined) return undefined;
  if (p.field === undefined) return siteError(site, nodesAt, p.problem, p.fix);
  const place = recipe.locate(p.field);
  return new SpecError({ file: recipe.file, ...place, field: dotted(p.field), problem: p.problem, fix: p.fix });
}

/**
 * Deployments that share a node must answer on ports of their own there (sm121 checks the API
 * port; the node's own sshd and other services are the operator's). Also records, on every node
 * bundle, which other deployments the site puts on that node: serving one leaves them running.
 */
export function shareNodes(site: Site, bundles: DeploymentBundle[]): SpecError[] {
  const errors: SpecError[] = [];
  const siteErr = siteErrorsOf(site);
  const on = new Map<string, Array<{ b: DeploymentBundle; port?: number }>>();
  for (const b of bundles) {
    for (const nb of b.nodes) {
      on.set(nb.node, [...(on.get(nb.node) ?? []), { b, ...(nb.api !== undefined && { port: nb.api.port }) }]);
    }
  }
  for (const [node, here] of on) {
    for (const { b } of here) {
      const nb = b.nodes.find((x) => x.node === node);
      const others = here.filter((x) => x.b !== b).map((x) => x.b.deployment);
      if (nb !== undefined && others.length > 0) nb.neighbors = others;
    }
    here.forEach((x, k) => {
      const clash = here.slice(0, k).find((y) => y.port !== undefined && y.port === x.port);
      if (clash === undefined) return;
      const i = site.deployments.findIndex((d) => d.name === x.b.deployment);
      const d = site.deployments[i];
      const j = d?.nodes.indexOf(node) ?? 0;
      const both = { a: clash.b.deployment, b: x.b.deployment };
      const problem = msg("spec.check.portClash", { node, ...both, port: x.port ?? "" });
      const fix = msg("spec.check.portClashFix", { deployment: x.b.deployment, file: x.b.recipeFile });
      const nodesAt = d === undefined ? ["deployments", i, "nodes"] : placesOf(d, i).nodes;
      errors.push(siteErr([...nodesAt, j], problem, fix));
    });
  }
  return errors;
}
