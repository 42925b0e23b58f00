/**
 * DGPP renders (seed 000): the cluster JSON, its sibling .env, and the provisioning script that
 * builds and installs a pinned release on rank 0 (which installs on the peers itself).
 */
import type { Recipe } from "../recipe/types";
import type { DeploymentBundle } from "../render/types";
import { joinNode, nodePath, quote } from "../text/shell";

export interface DgppPaths {
  dir: string;
  config: string;
  env: string;
  marker: string;
  buildScript: string;
  buildLog: string;
  session: string;
}

/** The files a DgppProvision stages in the DGPP directory, as the plan shows them: `<node> <path> sha256 <prefix>`. */
export function stagedLines(b: DeploymentBundle, paths: DgppPaths): string[] {
  return b.nodes.flatMap((n) =>
    n.files
      .filter((f) => f.path.startsWith(`${paths.dir}/`))
      .map((f) => `${n.node} ${f.path} sha256 ${f.sha256.slice(0, 12)}`),
  );
}

/**
 * Where DGPP's files are on the nodes. The build log is in the deployment's own directory on rank 0
 * (`deploymentDir`, made 0700 by the build's start), never in the node's shared /tmp, where anyone
 * could put a symlink at its name and have the build write over another file.
 */
export function dgppPaths(recipe: Recipe, deploymentDir: string): DgppPaths {
  return { ...checkoutPaths(recipe), buildLog: joinNode(deploymentDir, "dgpp-build.log") };
}

/** The paths in the DGPP checkout on the nodes. */
function checkoutPaths(recipe: Recipe): Omit<DgppPaths, "buildLog"> {
  const dir = recipe.dgpp?.dir ?? "~/dgpp";
  return {
    dir,
    config: joinNode(dir, `sm121-${recipe.name}.json`),
    env: joinNode(dir, ".env"),
    marker: joinNode(dir, ".sm121-dgpp-rev"),
    buildScript: joinNode(dir, `.sm121-dgpp-build-${recipe.name}.sh`),
    session: `sm121-dgpp-${recipe.name}`,
  };
}

/**
 * Stable JSON: keys in a fixed order, the engine table verbatim. DGPP takes no API key (its HTTP
 * service has no authentication), so it listens only where the site says rank 0 may bind: `bind`,
 * the node's BIND, else its ip (the same bytes as before for a node without BIND: no restart).
 */
export function dgppClusterJson(recipe: Recipe, peers: string[], bind: string): string {
  const d = recipe.dgpp;
  const doc = {
    model: recipe.model ?? recipe.servedModelName ?? recipe.name,
    world_size: peers.length,
    http: { host: bind, port: d?.httpPort ?? 18080 },
    rendezvous: { host: peers[0] ?? "127.0.0.1", port: (d?.httpPort ?? 18080) + 1000 },
    engine: d?.engine ?? {},
  };
  return `${JSON.stringify(doc, null, 2)}\n`;
}

/** The sibling .env: DGPP_NODES space-separated in rank order, the ssh user, the ports. */
export function dgppEnvFile(recipe: Recipe, peers: string[], sshUser: string): string {
  const port = recipe.dgpp?.httpPort ?? 18080;
  return [
    "# Written by sm121 for DGPP's scripts/dgpp-cluster.",
    `DGPP_NODES="${peers.join(" ")}"`,
    `DGPP_SSH_USER="${sshUser}"`,
    `DGPP_HTTP_PORT="${port}"`,
    ...(recipe.dgpp?.roceDevices !== undefined ? [`DGPP_ROCE_DEVICES="${recipe.dgpp.roceDevices}"`] : []),
    "",
  ].join("\n");
}

/**
 * The build script of seed 000 step 4-5: fetch, checkout, release.sh, install (tolerating
 * "release already exists" when `releases` lists the rev), then the marker, then DONE. With
 * set -e and the marker last, a failed build leaves no marker, so the next up retries.
 */
export function dgppBuildScript(recipe: Recipe): string {
  const d = recipe.dgpp;
  if (d?.repo === undefined || d.rev === undefined)
    throw new Error(`${recipe.file}: [dgpp] has no repo/rev to provision`);
  const p = checkoutPaths(recipe);
  return [
    "#!/usr/bin/env bash",
    `# Written by sm121: builds and installs DGPP ${d.rev} for recipe ${recipe.name}.`,
    "set -euo pipefail",
    `mkdir -p ${nodePath(p.dir)}`,
    `cd ${nodePath(p.dir)}`,
    "[ -d .git ] || git init -q",
    `if git remote get-url origin >/dev/null 2>&1; then git remote set-url origin ${quote(d.repo)}; ` +
      `else git remote add origin ${quote(d.repo)}; fi`,
    "git fetch -q --tags origin '+refs/heads/*:refs/remotes/origin/*'",
    `git checkout -q --detach ${quote(d.rev)}`,
    "abbrev=$(git rev-parse --short=7 HEAD)",
    "scripts/release.sh",
    "tarball=$(ls -t dist/dgpp-*.tar.zst | head -n 1)",
    `if ! scripts/dgpp-cluster install "$tarball" --config ${nodePath(p.config)}; then`,
    // Not grep -q: it would stop reading early, and pipefail would count releases' SIGPIPE as failure.
    `  scripts/dgpp-cluster releases --config ${nodePath(p.config)} | grep -F "$abbrev" > /dev/null`,
    '  echo "sm121: release $abbrev was already installed; keeping it"',
    "fi",
    `echo ${quote(d.rev)} > ${nodePath(p.marker)}`,
    "echo SM121-DGPP-DONE",
    "",
  ].join("\n");
}
