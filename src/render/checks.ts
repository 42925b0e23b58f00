/** Rules across the site and the recipes, checked before anything is rendered or touched. */
import { driverFor } from "../engines";
import { MAX_ERRORS, SpecError } from "../recipe/errors";
import { tableFor } from "../engines/options/versions";
import { dotted, type FieldPath } from "../recipe/locate";
import type { Deployment, Recipe, Site } from "../recipe/types";
import type { DeploymentBundle } from "./types";

export function siteError(site: Site, path: FieldPath, problem: string, fix: string): SpecError {
  return siteErrorsOf(site)(path, problem, fix);
}

/** siteError for many errors of one site (the site's locator parses its files once). */
export function siteErrorsOf(site: Site): (path: FieldPath, problem: string, fix: string) => SpecError {
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
      const fix = `use one of ${[...recipes.keys()].join(", ")} or add ${site.recipesDir}/${d.recipe}.toml`;
      errors.push(siteErr([...entry, "recipe"], `recipe "${d.recipe}" is not in ${site.recipesDir}/`, fix));
      return;
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
        const also = `node "${n}" also serves deployment ${prev.name}`;
        const remove = `remove ${n} from one of them`;
        if (multi !== undefined) {
          const problem = `${also}, and ${multi.name} runs on ${multi.nodes} nodes; ` +
            "a node shared by deployments serves one-node deployments only (the ranks of a group meet on fixed ports)";
          errors.push(siteErr(at, problem, `give ${multi.name} nodes of its own, or ${remove}`));
        } else if (dgpp !== undefined) {
          const problem = `${also}, and ${dgpp.name} is a DGPP deployment, which takes its node whole`;
          errors.push(siteErr(at, problem, remove));
        } else if (script) {
          const problem = `${also} of the same script recipe ${recipe.name} (one recipe dir, one container)`;
          errors.push(siteErr(at, problem, remove));
        }
      } else owner.set(n, { name: d.name, recipe, nodes: d.nodes.length });
    });
    if (recipe.deploy === "script") {
      const addProfile = `add profile: <name> (a file in ${recipe.profilesDir ?? "its profiles_dir"})`;
      if (d.profile === undefined) {
        errors.push(siteErr(entry, `recipe ${recipe.name} is a script recipe and needs a profile`, addProfile));
      }
    } else {
      const notScript = `profiles belong to script recipes; ${recipe.name} is deploy = "${recipe.deploy}"`;
      if (d.profile !== undefined) errors.push(siteErr([...entry, "profile"], notScript, "remove profile"));
      const overlay = "overlays apply to script recipes";
      if (d.overlay !== undefined) errors.push(siteErr([...entry, "overlay"], overlay, "remove overlay"));
      const launch = launchOf(site, d, recipe);
      if (launch !== undefined) errors.push(launch);
    }
    for (const [j, nodeName] of d.nodes.entries()) {
      const node = Object.hasOwn(site.nodes, nodeName) ? site.nodes[nodeName] : undefined;
      if (node === undefined) continue;
      if (node.host === "ssh" && node.ssh === undefined) {
        errors.push(siteErr([...nodesAt, j], `node ${nodeName} has no ssh block`, "add ssh: {host, user} to the node"));
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
    const problem = `the nodes of deployment ${d.name} have different numbers of GPUs (${each}); ` +
      "the engine runs the same number of ranks on every node";
    return siteError(site, nodesAt, problem, "serve it on nodes with the same number of GPUs");
  }
  const table = tableFor(recipe.engine, recipe)?.table;
  const at = site.locate(entry);
  const deployment = `deployment ${d.name} (${at.line > 0 ? `${at.file}:${at.line}` : at.file})`;
  const layout = { nodes: d.nodes.length, gpusPerNode: gpus[0] ?? 1, deployment, ...(table && { table }) };
  const p = driverFor(recipe.engine).launchProblem(recipe, layout);
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
      const both = `${clash.b.deployment} and ${x.b.deployment}`;
      const problem = `node "${node}" serves deployments ${both}, both on port ${x.port ?? ""}`;
      const fix = `give ${x.b.deployment} another port ` +
        `(port in ${x.b.recipeFile}, or the node's PORT for a script recipe)`;
      const nodesAt = d === undefined ? ["deployments", i, "nodes"] : placesOf(d, i).nodes;
      errors.push(siteErr([...nodesAt, j], problem, fix));
    });
  }
  return errors;
}
