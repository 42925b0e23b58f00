/** Bundles of the engine targets (docker, tmux, native): argv from the driver, scripts from the target. */
import { driverFor, engineArgv } from "../engines";
import type { Deployment, Recipe, Site, SiteNode } from "../recipe/types";
import { dockerTarget } from "../targets/docker";
import { dgppNativeTarget, nativeTarget } from "../targets/native";
import { joinNode } from "../text/shell";
import { tripwireOf } from "../targets/tripwire";
import { tmuxTarget } from "../targets/tmux";
import type { LaunchSpec, TargetScripts } from "../targets/types";
import { dgppClusterJson, dgppEnvFile, dgppPaths } from "../dgpp/files.render";
import { containerAccess, fabricEnv, fabricFacts } from "../fabric/env.render";
import { containerLabel } from "./launch";
import { endpoint, hfCacheCheck, nodeBundle } from "./node";
import { recipeRevision } from "../engines/options/recipe";
import type { NodeBundle, PreflightCheck } from "./types";
import { say } from "../text/messages";

const CONTAINER_HF_HOME = "/root/.cache/huggingface";
/** Where a container sees the API key file that the start script writes into the state dir. */
const CONTAINER_KEY_FILE = "/run/sm121/api-key.yaml";

export function engineNodeBundles(site: Site, d: Deployment, recipe: Recipe): NodeBundle[] {
  const driver = driverFor(recipe.engine);
  const nodes = d.nodes.map((n) => site.nodes[n]).filter((n): n is SiteNode => n !== undefined);
  const peers = nodes.map((n) => n.ip);
  const port = driver.apiPort(recipe);
  const headCoordinated = driver.shape === "head-coordinated";
  return nodes.map((node, rank) => {
    const bindHost = node.env.BIND ?? node.ip;
    const docker = recipe.deploy === "docker";
    const stateDir = joinNode(node.stateDir, "deployments", d.name);
    // An engine that takes its key from a file gets it next to secrets.env, written at start.
    const keyFile =
      driver.apiKey === "key-file"
        ? {
            path: joinNode(stateDir, "api-key.yaml"),
            seenAs: docker ? CONTAINER_KEY_FILE : joinNode(stateDir, "api-key.yaml"),
          }
        : undefined;
    const ctx = {
      recipe,
      rank,
      nnodes: nodes.length,
      peers,
      bindHost,
      port,
      ...(keyFile !== undefined && { keyFile: keyFile.seenAs }),
    };
    const argv = engineArgv(driver, ctx);
    // The node's fabric first: a recipe may still set any of its variables for its engine.
    const env: Record<string, string> = { ...(node.fabric === undefined ? {} : fabricEnv(node.fabric)), ...recipe.env };
    const access = docker ? containerAccess(node, nodes.length, site.fabric) : undefined;
    if (node.env.HF_HOME !== undefined) env["HF_HOME"] = docker ? CONTAINER_HF_HOME : node.env.HF_HOME;
    Object.assign(env, driver.engineEnv(recipe, node.ip));
    const mounts =
      docker && node.env.HF_HOME !== undefined
        ? [`${node.env.HF_HOME}:${CONTAINER_HF_HOME}`, ...recipe.mounts]
        : [...recipe.mounts];
    // The HF cache that this up fills (the engine downloads into it, or ModelCache copies) is made
    // by the up; one that nothing fills must exist already, and the plan says so.
    const hf = hfCachePlan(site, recipe, node);
    const spec: LaunchSpec = {
      deployment: d.name,
      recipe: recipe.name,
      engine: recipe.engine,
      deploy: recipe.deploy,
      rank,
      nnodes: nodes.length,
      runs: !headCoordinated || rank === 0,
      argv: headCoordinated ? [] : argv,
      env,
      ...(recipe.image !== undefined && { image: recipe.image }),
      mounts,
      stateDir,
      ...(keyFile !== undefined && { keyFile }),
      ...(access !== undefined && { access }),
    };
    // An engine that takes no --host answers on its own peer address: rank 0's ip, not BIND. DGPP
    // listens where its cluster JSON binds it: rank 0's bind address.
    const headBind = nodes[0]?.env.BIND ?? nodes[0]?.ip ?? bindHost;
    const apiHost = driver.takesHostPort ? bindHost : headCoordinated ? headBind : (peers[0] ?? bindHost);
    const serves = rank === 0;
    const extraFiles: TargetScripts["files"] = [];
    let scripts: TargetScripts;
    if (headCoordinated) {
      // The head-coordinated engine (DGPP) brings its own bundle: cluster JSON, .env, its manager.
      const paths = dgppPaths(recipe, stateDir);
      const user = node.ssh?.user ?? "root";
      // Stage first: the cluster JSON and .env go to every launch node (install validates them per node).
      const config = dgppClusterJson(recipe, peers, headBind);
      extraFiles.push({ path: paths.config, content: config, mode: 0o644, backup: true });
      extraFiles.push({ path: paths.env, content: dgppEnvFile(recipe, peers, user), mode: 0o644, backup: true });
      scripts = dgppNativeTarget(spec, paths.dir, paths.config, { host: apiHost, port }, releaseOf(recipe));
      spec.argv = serves ? ["scripts/dgpp-cluster", "up", "--config", paths.config] : [];
    } else if (recipe.deploy === "docker") {
      const image = recipe.image !== undefined ? { image: recipe.image } : {};
      scripts = dockerTarget(spec, containerLabel({ argv, env, mounts, ...image }));
    } else if (recipe.deploy === "tmux") {
      scripts = tmuxTarget(spec);
    } else {
      scripts = nativeTarget(spec);
    }
    return nodeBundle({
      node,
      spec,
      scripts,
      extraFiles,
      mkdirs: hf.mkdirs,
      preflight: [
        ...enginePreflight(recipe, node, spec, {
          headCoordinated,
          // The bundle keeps its preflight's words in English: the state is the same whatever the language.
          hint: say(driver.installHint, "en"),
          made: hf.mkdirs,
          hfFilled: hf.filled,
        }),
        ...hf.checks,
        ...startFileChecks(recipe, spec),
      ],
      memGateGiB: node.minMemAvailableGiB ?? site.minMemAvailableGiB,
      tripwire: tripwireOf(site, node),
      fabric: fabricFacts(node, recipe, access),
      ...(serves && { api: endpoint(apiHost, port) }),
    });
  });
}

/** Which installed release `up` runs: the recipe's release, else the pinned rev's, else DGPP's newest. */
function releaseOf(recipe: Recipe): { name: string } | { rev: string } | undefined {
  if (recipe.dgpp?.release !== undefined) return { name: recipe.dgpp.release };
  if (recipe.dgpp?.rev !== undefined) return { rev: recipe.dgpp.rev };
  return undefined;
}

interface PreflightOf {
  headCoordinated: boolean;
  /** The driver's install hint. */
  hint: string;
  /** Directories the up makes before the start (not refused when missing). */
  made: readonly string[];
  /** Something in the up fills the HF cache (sm121:modelCache, or the engine's own download). */
  hfFilled: boolean;
}

function enginePreflight(recipe: Recipe, node: SiteNode, spec: LaunchSpec, o: PreflightOf): PreflightCheck[] {
  const { headCoordinated, hint, made } = o;
  const checks: PreflightCheck[] = [];
  if (!spec.runs && !headCoordinated) return checks;
  if (recipe.deploy === "docker" && recipe.image !== undefined) {
    checks.push({
      kind: "image",
      subject: recipe.image,
      why: `the image of ${recipe.name} (docker pull it on ${node.name})`,
      fatal: true,
    });
  }
  for (const m of spec.mounts) {
    const src = m.split(":")[0] ?? "";
    // A directory the up makes before the start (the HF cache it fills) may be missing: a warning.
    const making = made.includes(src);
    const why = making
      ? `mount source of ${m}; this up makes it before the start, and the engine downloads the model into it`
      : `mount source of ${m}`;
    checks.push({ kind: "file", subject: src, why, fatal: !making, mountSource: true });
  }
  if ((recipe.deploy === "tmux" || recipe.deploy === "native") && !headCoordinated) {
    checks.push({ kind: "command", subject: spec.argv[0] ?? "", why: `the engine entrypoint (${hint})`, fatal: true });
  }
  const hfHome = node.env.HF_HOME;
  // A local path is no hub checkpoint: the engine's own start says what it lacks.
  if (hfHome !== undefined && recipe.model !== undefined && !/^[/~]/.test(recipe.model)) {
    const revision = recipeRevision(recipe) ?? "main";
    const why = headCoordinated
      ? "the checkpoint; DGPP's own preflight needs it: " +
        `run \`python3 scripts/download_model.py --config ${dgppPaths(recipe, spec.stateDir).config}\` on rank 0`
      : o.hfFilled
        ? "the checkpoint in the node's HF cache; without it the engine downloads it at start"
        : "the checkpoint in the node's HF cache, which nothing in this up fills " +
          "(the engine runs offline or loads a local path, and sm121:modelCache is off)";
    const fatal = !headCoordinated && !o.hfFilled;
    checks.push(hfCacheCheck(node.name, hfHome, recipe.model, revision, { fatal, why }));
  }
  if (headCoordinated) {
    if (recipe.dgpp?.roceDevices === undefined) {
      checks.push({
        kind: "roce",
        subject: "2",
        why:
          'a host with more than two RoCE devices needs DGPP_ROCE_DEVICES ("transport supports at most two lanes"); ' +
          `set [dgpp] roce_devices in ${recipe.file}`,
        fatal: false,
      });
    }
    if (recipe.dgpp?.repo === undefined)
      checks.push({
        kind: "dir",
        subject: recipe.dgpp?.dir ?? "~/dgpp",
        why: "the pre-installed DGPP checkout ([dgpp] has no repo/rev)",
        fatal: true,
      });
  }
  return checks;
}

/** The engine downloads the model itself unless the recipe runs it offline or names a local path. */
function engineDownloads(recipe: Recipe): boolean {
  const on = (k: string) => ["1", "true", "yes", "on"].includes((recipe.env[k] ?? "").toLowerCase());
  const offline = on("HF_HUB_OFFLINE") || on("TRANSFORMERS_OFFLINE");
  return recipe.model !== undefined && !recipe.model.startsWith("/") && !recipe.model.startsWith("~") && !offline;
}

/**
 * The node's HF cache (HF_HOME): made by the up when the up fills it (the engine downloads into
 * it, or sm121:modelCache copies the model), else checked at plan time: a missing cache that
 * nothing fills would stop the engine (docker refuses the mount, the engine finds no model).
 */
function hfCachePlan(
  site: Site,
  recipe: Recipe,
  node: SiteNode,
): {
  mkdirs: string[];
  checks: PreflightCheck[];
  /** Something in the up fills the cache: the engine's own download or sm121:modelCache. */
  filled: boolean;
} {
  const hfHome = node.env.HF_HOME;
  if (hfHome === undefined || recipe.model === undefined) return { mkdirs: [], checks: [], filled: false };
  const perNode = driverFor(recipe.engine).shape === "per-node";
  if (site.modelCache !== "off" || (engineDownloads(recipe) && perNode)) {
    return { mkdirs: [hfHome], checks: [], filled: true };
  }
  const reads = perNode
    ? "the engine runs offline or loads a local path"
    : "the head-coordinated engine reads it from the cache and downloads nothing";
  const why =
    `the HF cache (HF_HOME) of ${node.name}, which nothing in this up fills (${reads}, ` +
    `and sm121:modelCache is off); create it on ${node.name} and put ${recipe.model} there, ` +
    "or set sm121:modelCache: keep";
  return { mkdirs: [], checks: [{ kind: "dir", subject: hfHome, why, fatal: true, atPlan: true }], filled: false };
}

/** Where a container path is on the node, through the mounts (the longest mount target that holds it). */
function hostPathOf(path: string, mounts: readonly string[]): string | undefined {
  let best: { src: string; dst: string } | undefined;
  for (const m of mounts) {
    const [src = "", dst = ""] = m.split(":");
    const holds = path === dst || path.startsWith(`${dst.replace(/\/+$/, "")}/`);
    if (holds && (best === undefined || dst.length > best.dst.length)) best = { src, dst };
  }
  if (best === undefined) return undefined;
  return `${best.src.replace(/\/+$/, "")}${path.slice(best.dst.replace(/\/+$/, "").length)}`;
}

/**
 * The files the engine opens while it parses its arguments, checked on the node at plan time: as
 * written for a process on the node, through the mounts for a container. A relative path, or a
 * container path no mount brings, is not checked (the working directory or the image decides).
 */
function startFileChecks(recipe: Recipe, spec: LaunchSpec): PreflightCheck[] {
  if (!spec.runs) return [];
  return driverFor(recipe.engine)
    .startFiles(recipe)
    .flatMap((f) => {
      const inContainer = recipe.deploy === "docker";
      const onNode = !inContainer ? f.path : f.path.startsWith("/") ? hostPathOf(f.path, spec.mounts) : undefined;
      if (onNode === undefined || !(onNode.startsWith("/") || onNode.startsWith("~/"))) return [];
      const seen = onNode === f.path ? "" : ` (${f.path} in the container)`;
      const why = `${f.why}${seen}; put the file there, or change the path in ${recipe.file}`;
      return [{ kind: "file" as const, subject: onNode, why, fatal: true, atPlan: true }];
    });
}
