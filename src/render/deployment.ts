/**
 * Rendering a whole site: every deployment's bundles, decided at plan time from the recipes, the
 * profiles and the site. Pure but for reading the profile and overlay files under `root`.
 */
import { linkTestPlan } from "../fabric/linktest.render";
import { driverFor } from "../engines";
import { collectErrors, SpecError, throwIfAny } from "../recipe/errors";
import type { Deployment, Recipe, Site } from "../recipe/types";
import { checkDeployments, shareNodes } from "./checks";
import { engineNodeBundles } from "./engine";
import { identityOf } from "./identity";
import { scriptNodeBundles } from "./script";
import type { DeploymentBundle } from "./types";
import { say } from "../text/messages";

export interface RenderOptions {
  /** The project directory: recipesDir, profiles and overlays resolve against it. */
  root: string;
}

export function renderSite(site: Site, recipes: ReadonlyMap<string, Recipe>, opts: RenderOptions): DeploymentBundle[] {
  throwIfAny(checkDeployments(site, recipes));
  const errors: SpecError[] = [];
  const out: DeploymentBundle[] = [];
  for (const d of site.deployments) {
    const b = collectErrors(errors, () => renderDeployment(site, d, recipes, opts));
    if (b !== undefined) out.push(b);
  }
  throwIfAny(errors);
  throwIfAny(shareNodes(site, out));
  return out;
}

export function renderDeployment(
  site: Site,
  d: Deployment,
  recipes: ReadonlyMap<string, Recipe>,
  opts: RenderOptions,
): DeploymentBundle {
  const recipe = recipes.get(d.recipe);
  if (recipe === undefined) throw new Error(`recipe ${d.recipe} is not loaded`);
  const driver = driverFor(recipe.engine);
  const base = {
    deployment: d.name,
    recipe: recipe.name,
    recipeFile: recipe.file,
    engine: recipe.engine,
    deploy: recipe.deploy,
    shape: driver.shape,
    memTimeoutS: site.memTimeoutS,
    rollback: recipe.rollback === "auto" || site.rollback === "auto" ? ("auto" as const) : ("off" as const),
    hooks: recipe.hooks,
    // The bundle is state: its words stay English whatever the locale, or a change of LANG would show as a change.
    warnings: recipe.warnings.map((w) => say(w, "en")),
    ...(recipe.optionsChecked !== undefined && { optionsChecked: recipe.optionsChecked }),
    ...(recipe.gate !== undefined && { gate: recipe.gate }),
  };
  if (recipe.deploy === "script") {
    const s = scriptNodeBundles(site, d, recipe, opts.root);
    return withIdentity({
      ...base,
      profile: s.profile.name,
      profileStatus: s.profile.directives.status,
      runnable: s.profile.directives.runnable,
      ...(d.overlay !== undefined && { overlay: d.overlay }),
      nodes: s.nodes,
      readiness: {
        timeoutS: s.readyTimeoutS,
        graceS: site.readyGraceS,
        proofs: [...new Set([...recipe.readiness.proofs, ...s.proofs])],
        ...(s.servedName !== undefined && { servedName: s.servedName }),
        ...((recipe.readiness.maxModelLen ?? s.maxModelLen) !== undefined && {
          maxModelLen: recipe.readiness.maxModelLen ?? s.maxModelLen,
        }),
        ...(driver.kvCachePattern !== undefined && { kvCachePattern: driver.kvCachePattern }),
      },
      clientNotes: s.profile.directives.clients,
      warnings: [...base.warnings, ...s.replacements.map((r) => say(r, "en"))],
    });
  }
  // gr8 and DGPP take no served name (their drivers refuse one): they serve the model's repo id.
  const served = recipe.servedModelName ?? recipe.model;
  const nodes = engineNodeBundles(site, d, recipe);
  const check = site.fabric.check && nodes.length > 1;
  return withIdentity({
    ...base,
    runnable: true,
    nodes,
    ...(check && { linkTest: linkTestPlan(site, { deployment: d.name, deploy: recipe.deploy, nodes }) }),
    readiness: {
      timeoutS: recipe.readiness.timeoutS + site.readyGraceS,
      graceS: site.readyGraceS,
      proofs: recipe.readiness.proofs,
      ...(served !== undefined && { servedName: served }),
      ...(recipe.readiness.maxModelLen !== undefined && { maxModelLen: recipe.readiness.maxModelLen }),
      ...(driver.kvCachePattern !== undefined && { kvCachePattern: driver.kvCachePattern }),
    },
    clientNotes: [],
  });
}

/**
 * The bundle the engine's own sequence runs: with `sm121:hooks: pulumi-command` the hooks are
 * Commands of their own (components/hookCommands), so the engine's start, its stop and the stop.sh
 * it leaves on a node carry none; `sm121 render` shows that same bundle.
 */
export function engineSequenceBundle(b: DeploymentBundle, hooks: Site["hooks"]): DeploymentBundle {
  return hooks === "engine" ? b : { ...b, hooks: { beforeServe: [], afterStop: [] } };
}

function withIdentity(b: Omit<DeploymentBundle, "identity">): DeploymentBundle {
  // How the wait is said (its grace part) is no part of what runs.
  const { graceS: _said, ...readiness } = b.readiness;
  // The gate is checked on the running engine, as the readiness is (a bundle without one hashes as before).
  const nodes = b.nodes.map((n) => [n.node, n.rank, n.identity]);
  return { ...b, identity: identityOf({ nodes, readiness, ...(b.gate !== undefined && { gate: b.gate }) }) };
}
