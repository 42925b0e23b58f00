/** One node's bundle from its launch spec and target scripts: files hashed, identity computed. */
import type { SiteNode, Tripwire } from "../recipe/types";
import { withTripwire } from "../targets/tripwire";
import type { LaunchSpec, TargetScripts } from "../targets/types";
import { identityOf, sha256 } from "./identity";
import type { ApiEndpoint, NodeBundle, NodeConn, PreflightCheck } from "./types";

/** Is `host` a loopback address, reachable only from the node itself? */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host.startsWith("127.") || host === "::1";
}

export function nodeConn(node: SiteNode): NodeConn {
  if (node.host === "local" || node.ssh === undefined) return { kind: "local", host: "localhost", port: 0, user: "" };
  return { kind: "ssh", host: node.ssh.host, port: node.ssh.port, user: node.ssh.user };
}

export interface NodeParts {
  node: SiteNode;
  spec: LaunchSpec;
  scripts: TargetScripts;
  extraFiles: TargetScripts["files"];
  mkdirs: string[];
  preflight: PreflightCheck[];
  memGateGiB: number;
  api?: ApiEndpoint;
  envKeys?: Record<string, string>;
  /** The plan's facts of the node's fabric (fabric/env.render.ts). */
  fabric?: string[];
  /** The memory tripwire beside the engine (targets/tripwire). */
  tripwire: Tripwire;
}

export function nodeBundle(p: NodeParts): NodeBundle {
  const scripts = withTripwire(p.spec, p.scripts, p.tripwire, p.node.name);
  const files = [...p.extraFiles, ...scripts.files].map((f) => ({ ...f, sha256: sha256(f.content) }));
  // The identity covers what runs and what is written, never where it is reached from.
  const identity = identityOf({
    argv: p.spec.argv,
    env: p.spec.env,
    image: p.spec.image,
    mounts: p.spec.mounts,
    files: files.map((f) => ({ path: f.path, mode: f.mode, sha256: f.sha256 })),
    start: scripts.start,
    stop: scripts.stop,
    runs: p.spec.runs,
  });
  return {
    node: p.node.name,
    rank: p.spec.rank,
    ip: p.node.ip,
    protected: p.node.protected,
    conn: nodeConn(p.node),
    runs: p.spec.runs,
    ...(p.spec.image !== undefined && { image: p.spec.image }),
    argv: p.spec.argv,
    env: p.spec.env,
    stateDir: p.spec.stateDir,
    files,
    start: scripts.start,
    stop: scripts.stop,
    status: scripts.status,
    statusAsksApi: scripts.statusAsksApi,
    logs: scripts.logs,
    launch: scripts.launch,
    ...(scripts.containerName !== undefined && { containerName: scripts.containerName }),
    mkdirs: p.mkdirs,
    preflight: p.preflight,
    memGateGiB: p.memGateGiB,
    ...(p.api !== undefined && { api: p.api }),
    ...(p.envKeys !== undefined && { envKeys: p.envKeys }),
    ...(p.fabric !== undefined && p.fabric.length > 0 && { fabric: p.fabric }),
    container:
      p.spec.deploy === "docker"
        ? {
            mounts: p.spec.mounts,
            ...(p.spec.access !== undefined && { access: p.spec.access }),
            ...(p.spec.keyFile !== undefined && { keyFile: p.spec.keyFile }),
          }
        : null,
    identity,
  };
}

/**
 * The node's `.env` (seed 001): the file a script recipe's start.sh reads, which sm121 renders with
 * its header and carries HF_TOKEN and API_KEY over in. The one rule every reader and writer of it
 * uses: a script recipe's bundle (it has the profile's keys) and its file named `.env`.
 */
export function envFileOf<F extends { path: string }>(nb: { files: readonly F[]; envKeys?: unknown }): F | undefined {
  return nb.envKeys === undefined ? undefined : nb.files.find((f) => f.path.endsWith("/.env"));
}

export function endpoint(host: string, port: number): ApiEndpoint {
  return { host, port, url: `http://${host}:${port}` };
}

/** The engine's own pin, `--revision X` (vLLM and SGLang read it), so that cache and engine agree. */
/**
 * The HF-cache check of a model on a node: its revision complete in the cache under `hfHome`
 * (serve/probe matches the snapshot against its index, as the model cache does). Fatal, and made
 * by every plan, when nothing in the up brings the model; the fix names the download command for
 * that node and sm121:modelCache.
 */
export function hfCacheCheck(
  node: string,
  hfHome: string,
  repo: string,
  revision: string,
  o: { fatal: boolean; why: string },
): PreflightCheck {
  const fix =
    `fix: on ${node} run \`HF_HOME=${hfHome} hf download ${repo} --revision ${revision}\`, ` +
    "or set sm121:modelCache: keep and the up brings it";
  return {
    kind: "hf-cache",
    subject: hfCacheDir(hfHome, repo),
    why: `${o.why}; ${fix}`,
    fatal: o.fatal,
    ...(o.fatal && { atPlan: true }),
    model: { repo, revision },
  };
}

/** Hugging Face cache directory of a repo id, as the hub lays it out. */
export function hfCacheDir(hfHome: string, model: string): string {
  return `${hfHome.replace(/\/+$/, "")}/hub/models--${model.replace(/\//g, "--")}`;
}
