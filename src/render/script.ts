/** Bundles of script recipes (seed 001): the profile rendered into the node recipe's .env. */
import { join } from "node:path";
import { SpecError, throwIfAny } from "../recipe/errors";
import { msg, type Msg } from "../text/messages";
import type { Deployment, Recipe, Site, SiteNode } from "../recipe/types";
import { scriptTarget } from "../targets/script";
import { joinNode } from "../text/shell";
import { tripwireOf } from "../targets/tripwire";
import type { LaunchSpec } from "../targets/types";
import { driverFor } from "../engines";
import { siteError } from "./checks";
import { mountTarget, pairsFromTokens, tokenizeLine, type LocatedPair } from "./dockerargs";
import { renderEnv } from "./envfile";
import { fabricEnv, fabricFacts } from "../fabric/env.render";
import { endpoint, hfCacheCheck, nodeBundle } from "./node";
import { MANIFEST_FILE, loadOverlay, type Overlay } from "./overlay";
import { readProfileFile, type Profile } from "./profile";
import type { NodeBundle, PreflightCheck } from "./types";

export interface ScriptRender {
  profile: Profile;
  nodes: NodeBundle[];
  proofs: string[];
  servedName?: string;
  maxModelLen?: number;
  readyTimeoutS: number;
  /** What an overlay replaced, by node: said in English into the bundle (render/deployment). */
  replacements: Msg[];
}

/**
 * Where a script recipe's profiles are, relative to the project: `profilesDir`, else
 * `<name>/profiles`, under the recipes directory.
 */
export function profilesDirOf(recipesDir: string, recipe: Recipe): string {
  return join(recipesDir, recipe.profilesDir ?? `${recipe.name}/profiles`);
}

/** Reads the deployment's profile (and overlay) from `root` and renders every node's .env. */
export function scriptNodeBundles(site: Site, d: Deployment, recipe: Recipe, root: string): ScriptRender {
  const rel = join(profilesDirOf(site.recipesDir, recipe), `${d.profile ?? ""}.env`);
  const profile = readProfileFile(join(root, rel), rel);
  // The overlay is named as the site names it, so that the .env identity does not depend on where
  // the project is checked out.
  const overlay: Overlay | undefined =
    d.overlay === undefined ? undefined : { ...loadOverlay(join(root, d.overlay)), dir: d.overlay };
  const target = profile.directives.recipe;
  const nodes = d.nodes.map((n) => site.nodes[n]).filter((n): n is SiteNode => n !== undefined);
  const errors: SpecError[] = [];
  const replacements: Msg[] = [];
  let proofs: string[] = [];
  let keys: Record<string, string> = {};
  const bundles = nodes.map((node, rank) => {
    const nodeRecipe = Object.hasOwn(node.recipes, target) ? node.recipes[target] : undefined;
    if (nodeRecipe === undefined) {
      const needs = msg("spec.script.nodeRecipe", { profile: profile.name, recipe: target, node: node.name });
      errors.push(
        siteError(
          site,
          ["nodes", node.name, "recipes"],
          needs,
          msg("spec.script.nodeRecipeFix", { recipe: target, node: node.name }),
        ),
      );
      return undefined;
    }
    // The endpoint sm121 probes must be the one start.sh binds, so BIND and PORT are the node's.
    const bind = node.env.BIND;
    const port = Number(node.env.PORT);
    if (bind === undefined || node.env.PORT === undefined) {
      errors.push(
        siteError(
          site,
          ["nodes", node.name, "env"],
          msg("spec.script.bind", { node: node.name, recipe: target }),
          msg("spec.script.bindFix"),
        ),
      );
      return undefined;
    }
    // start.sh sources the .env, where a quoted ~ stays a ~: the node's home must be written out.
    if (node.env.HF_HOME?.startsWith("~") === true) {
      const problem = msg("spec.script.hfHome", { node: node.name, recipe: target });
      errors.push(siteError(site, ["nodes", node.name, "env", "HF_HOME"], problem, msg("spec.script.hfHomeFix")));
      return undefined;
    }
    const before = errors.length;
    const nodeDockerArgs = nodeRecipeDockerArgs(site, node.name, target, nodeRecipe.dockerArgs, errors);
    if (errors.length > before) return undefined;
    // The node's fabric reaches start.sh's container as the engines' variables reach theirs, with the
    // engine's host-IP variable: -e pairs of EXTRA_DOCKER_ARGS, the one channel a profile has into it.
    const fabric =
      node.fabric === undefined
        ? undefined
        : { ...fabricEnv(node.fabric), ...driverFor(recipe.engine).engineEnv(recipe, node.ip) };
    const env = renderEnv({
      profile,
      node: node.name,
      recipe: target,
      nodeEnv: node.env,
      vars: { ...node.vars, ...nodeRecipe.vars },
      recipeDir: nodeRecipe.dir,
      ...(overlay !== undefined && { overlay }),
      overlayWins: d.overlayWins,
      ownedMounts: nodeRecipe.ownedMounts,
      siteFile: site.file,
      nodeDockerArgs,
      ...(fabric !== undefined && { fabricEnv: fabric }),
    });
    replacements.push(...env.replacements.map((r) => msg("state.onNode", { node: node.name, text: r })));
    proofs = env.proofs;
    keys = env.keys;
    const spec: LaunchSpec = {
      deployment: d.name,
      recipe: recipe.name,
      engine: recipe.engine,
      deploy: "script",
      rank,
      nnodes: nodes.length,
      runs: true,
      argv: ["bash", nodeRecipe.start],
      env: {},
      mounts: [],
      stateDir: joinNode(node.stateDir, "deployments", d.name),
    };
    // Seed 001: the overlay's manifest.json goes into the deployment's state on the node, unchanged.
    const manifest =
      overlay === undefined
        ? []
        : [{ path: joinNode(spec.stateDir, MANIFEST_FILE), content: overlay.manifestText, mode: 0o644, backup: false }];
    return nodeBundle({
      node,
      spec,
      scripts: scriptTarget(spec, nodeRecipe, env.text),
      fabric: fabricFacts(node, recipe, undefined, { own: env.fabricOwn, ownedBy: profile.file }),
      extraFiles: manifest,
      mkdirs: env.mkdirs,
      preflight: [
        ...scriptPreflight(nodeRecipe.dir, nodeRecipe.start, nodeRecipe.stop, env.keys, env.mkdirs),
        ...hfCacheChecks(node, env.keys, site.modelCache !== "off"),
      ],
      memGateGiB: node.minMemAvailableGiB ?? site.minMemAvailableGiB,
      tripwire: tripwireOf(site, node),
      api: endpoint(bind, port),
      envKeys: env.keys,
    });
  });
  throwIfAny(errors);
  const readyKey = Number(keys["READY_TIMEOUT_S"] ?? "1800");
  const maxLen = keys["MAX_MODEL_LEN"] === undefined ? undefined : Number(keys["MAX_MODEL_LEN"]);
  return {
    profile,
    nodes: bundles.filter((b): b is NodeBundle => b !== undefined),
    proofs,
    ...(keys["SERVED_MODEL_NAME"] !== undefined && { servedName: keys["SERVED_MODEL_NAME"] }),
    ...(maxLen !== undefined && Number.isFinite(maxLen) && { maxModelLen: maxLen }),
    readyTimeoutS: (Number.isFinite(readyKey) ? readyKey : 1800) + site.readyGraceS,
    replacements,
  };
}

/**
 * The node recipe's dockerArgs as -e/-v pairs, by the rules of a profile's EXTRA_DOCKER_ARGS;
 * errors point at the field in the site file.
 */
function nodeRecipeDockerArgs(
  site: Site,
  node: string,
  recipe: string,
  text: string | undefined,
  errors: SpecError[],
): LocatedPair[] {
  if (text === undefined || text.trim() === "") return [];
  const path = ["nodes", node, "recipes", recipe, "dockerArgs"];
  // The site's locator finds the value where it is written (stack file, Pulumi.yaml or Pulumi's config).
  const at = site.locate(path);
  return pairsFromTokens(at.file, `sm121:${path.join(".")}`, tokenizeLine(text, at.line, at.col), errors, false);
}

/** Where start.sh mounts the HF cache in its container; a -v on that target replaces the cache. */
const CONTAINER_HF_CACHE = "/root/.cache/huggingface";

/**
 * Seed 001: the model's files in the HF cache under each mount whose target is the cache: the
 * node's HF_HOME that start.sh mounts (its default ~/.cache/huggingface), and any -v of
 * EXTRA_DOCKER_ARGS onto it. A preflight failure stops the up before anything stops, unless
 * sm121:modelCache brings the model into HF_HOME first.
 */
function hfCacheChecks(node: SiteNode, keys: Record<string, string>, modelCache: boolean): PreflightCheck[] {
  const model = keys["MODEL"];
  if (model === undefined || model === "" || model.startsWith("/") || !model.includes("/")) return [];
  const words = (keys["EXTRA_DOCKER_ARGS"] ?? "").split(/\s+/);
  const mounted = words.flatMap((w, i) =>
    words[i - 1] === "-v" && mountTarget(w) === CONTAINER_HF_CACHE ? [w.split(":")[0] ?? ""] : [],
  );
  const home = node.env.HF_HOME ?? "~/.cache/huggingface";
  const caches = [...new Set([home, ...mounted])];
  return caches.map((c) => {
    const brought = modelCache && c === home;
    const why =
      `MODEL of the profile, which start.sh mounts from this cache at ${CONTAINER_HF_CACHE}` +
      (brought ? "; sm121:modelCache brings it before the start" : "");
    return hfCacheCheck(node.name, c, model, "main", { fatal: !brought, why });
  });
}

/** Seed 001's preflight: the recipe, its scripts, the chat template, the draft vocab, every mount source. */
function scriptPreflight(
  dir: string,
  start: string,
  stop: string,
  keys: Record<string, string>,
  mkdirs: string[],
): PreflightCheck[] {
  const checks: PreflightCheck[] = [
    { kind: "dir", subject: dir, why: "the node-side recipe directory", fatal: true },
    { kind: "file", subject: joinNode(dir, start), why: "the recipe's start script", fatal: true },
    { kind: "file", subject: joinNode(dir, stop), why: "the recipe's stop script", fatal: true },
  ];
  for (const key of ["CHAT_TEMPLATE", "MTP_DRAFT_VOCAB"]) {
    const v = keys[key];
    if (v !== undefined && v !== "")
      checks.push({
        kind: "file",
        subject: v.startsWith("/") ? v : joinNode(dir, v),
        why: `${key} of the profile`,
        fatal: true,
      });
  }
  const image = keys["IMAGE"] ?? keys["VLLM_IMAGE"];
  if (image !== undefined) checks.push({ kind: "image", subject: image, why: "the recipe's image", fatal: true });
  const words = (keys["EXTRA_DOCKER_ARGS"] ?? "").split(/\s+/);
  words.forEach((w, i) => {
    // A mount source that the profile's mkdir creates is made before the start, not checked.
    const src = w.split(":")[0] ?? "";
    if (words[i - 1] !== "-v" || mkdirs.includes(src)) return;
    checks.push({ kind: "file", subject: src, why: `mount source of -v ${w}`, fatal: true, mountSource: true });
  });
  return checks;
}
