/**
 * Seed 001's .env identity, for every target: the launch identity of a node is what the engine
 * process is started with, and nothing else. Equal launch identity means that the running engine
 * is the one this bundle would start: an up updates the state and checks readiness and the proofs
 * on it, without a restart (engineDecide, serve).
 *
 * Launch fields: the argv, the environment, the image, the rank and whether it runs a process,
 * a container's mounts and RDMA access (docker), and the files the engine reads (a script
 * recipe's .env, which start.sh reads; DGPP's cluster JSON and .env). Not launch fields: the
 * readiness settings and proofs, sm121's own start, stop, status and logs scripts and the launch
 * line it shows (its wording changes between releases), and the files sm121 writes for itself
 * under the deployment's state directory (run.sh and engine.env, written from the argv and
 * environment above; the overlay manifest, whose sha256 the .env's overlay line carries).
 *
 * Computed from a stored NodeBundle alone, so that a bundle an older sm121 stored compares by the
 * same rule (sameLaunch); what an old bundle cannot show counts as changed (a restart, the safe side).
 */
import { identityOf } from "./identity";
import type { DeploymentBundle, NodeBundle } from "./types";

/** A file sm121 writes for itself (under the deployment's state directory), which the engine does not read. */
export function isOwnFile(nb: Pick<NodeBundle, "stateDir">, path: string): boolean {
  return path.startsWith(`${nb.stateDir.replace(/\/+$/, "")}/`);
}

/**
 * The docker container's `sm121.identity` label: what it runs (argv, env, mounts, image), short.
 * Every release since the docker target has put it on the container and in its start script.
 */
export function containerLabel(p: {
  argv: readonly string[];
  env: Record<string, string>;
  mounts: readonly string[];
  image?: string;
}): string {
  return identityOf({ argv: p.argv, env: p.env, mounts: p.mounts, image: p.image }).slice(0, 16);
}

/** The launch fields every target has. */
function common(nb: NodeBundle): Record<string, unknown> {
  const files = nb.files
    .filter((f) => !isOwnFile(nb, f.path))
    .map((f) => ({ path: f.path, mode: f.mode, sha256: f.sha256 }));
  return { argv: nb.argv, env: nb.env, image: nb.image, runs: nb.runs, rank: nb.rank, files };
}

/** The launch identity of a node bundle of this release (`container` set: null, or docker's part). */
export function launchIdentityOf(nb: NodeBundle): string {
  return identityOf({ ...common(nb), container: nb.container ?? null });
}

const LABEL = /--label sm121\.identity=([0-9a-f]{16})/;

/**
 * Whether `after` launches what `before` launched. A bundle an older release stored has no
 * `container` field: its docker part (mounts) is compared through the container label its start
 * script carries; RDMA access flags it cannot show, so a container that has them counts as changed.
 */
export function sameLaunch(before: NodeBundle, after: NodeBundle): boolean {
  if (before.container !== undefined) return launchIdentityOf(before) === launchIdentityOf(after);
  // Releases before the plan (9492e6f) kept no image on a node: a container's label below covers
  // it, and no other target runs an image.
  const shown = before.image === undefined ? { ...after, image: undefined } : after;
  if (identityOf(common(before)) !== identityOf(common(shown))) return false;
  const c = after.container ?? null;
  if (c === null) return true;
  const label = LABEL.exec(before.start)?.[1];
  // The label covers the mounts, not the API key file's mount nor the access flags.
  const mountsKnown = c.keyFile === undefined && c.access === undefined;
  const image = after.image !== undefined ? { image: after.image } : {};
  return mountsKnown && label === containerLabel({ argv: after.argv, env: after.env, mounts: c.mounts, ...image });
}

/** Nodes whose launch differs between two bundles of a deployment (a node new to it counts). */
export function launchChanged(before: DeploymentBundle, after: DeploymentBundle): string[] {
  const old = new Map(before.nodes.map((n) => [n.node, n]));
  return after.nodes
    .filter((n) => {
      const o = old.get(n.node);
      return o === undefined || !sameLaunch(o, n);
    })
    .map((n) => n.node);
}

/** What changed that is no launch field, in words, for "checks, does not restart: ...". */
export function checkFields(before: DeploymentBundle, after: DeploymentBundle): string[] {
  const out: string[] = [];
  const a = before.readiness;
  const b = after.readiness;
  if (a.timeoutS !== b.timeoutS || a.graceS !== b.graceS) out.push("the readiness wait");
  if (JSON.stringify(a.proofs) !== JSON.stringify(b.proofs)) out.push("the proofs");
  if (a.servedName !== b.servedName) out.push("the served model name");
  if (a.maxModelLen !== b.maxModelLen) out.push("max_model_len");
  if (a.kvCachePattern !== b.kvCachePattern) out.push("the KV cache line");
  if (JSON.stringify(before.gate) !== JSON.stringify(after.gate)) out.push("the gate");
  const old = new Map(before.nodes.map((n) => [n.node, n]));
  const scripts = after.nodes.some((n) => {
    const o = old.get(n.node);
    return o !== undefined && (o.start !== n.start || o.stop !== n.stop || o.status !== n.status || o.logs !== n.logs);
  });
  if (scripts) out.push("sm121's start and stop scripts");
  const own = (n: NodeBundle) =>
    n.files
      .filter((f) => isOwnFile(n, f.path))
      .map((f) => `${f.path}:${f.sha256}`)
      .join(",");
  const files = after.nodes.some((n) => {
    const o = old.get(n.node);
    return o !== undefined && own(o) !== own(n);
  });
  if (files) out.push("sm121's own files");
  return out.length > 0 ? out : ["the bundle's form (another sm121 release wrote it)"];
}
