/** One node's bundle from its launch spec and target scripts: files hashed, identity computed. */
import type { SiteNode } from "../recipe/types";
import type { LaunchSpec, TargetScripts } from "../targets/types";
import { identityOf, sha256 } from "./identity";
import type { ApiEndpoint, NodeBundle, NodeConn, PreflightCheck } from "./types";

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
  /** The plan's facts of the node's fabric (render/fabric.ts). */
  fabric?: string[];
}

export function nodeBundle(p: NodeParts): NodeBundle {
  const files = [...p.extraFiles, ...p.scripts.files].map((f) => ({ ...f, sha256: sha256(f.content) }));
  // The identity covers what runs and what is written, never where it is reached from.
  const identity = identityOf({
    argv: p.spec.argv,
    env: p.spec.env,
    image: p.spec.image,
    mounts: p.spec.mounts,
    files: files.map((f) => ({ path: f.path, mode: f.mode, sha256: f.sha256 })),
    start: p.scripts.start,
    stop: p.scripts.stop,
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
    start: p.scripts.start,
    stop: p.scripts.stop,
    status: p.scripts.status,
    statusAsksApi: p.scripts.statusAsksApi,
    logs: p.scripts.logs,
    launch: p.scripts.launch,
    mkdirs: p.mkdirs,
    preflight: p.preflight,
    memGateGiB: p.memGateGiB,
    ...(p.api !== undefined && { api: p.api }),
    ...(p.envKeys !== undefined && { envKeys: p.envKeys }),
    ...(p.fabric !== undefined && p.fabric.length > 0 && { fabric: p.fabric }),
    identity,
  };
}

export function endpoint(host: string, port: number): ApiEndpoint {
  return { host, port, url: `http://${host}:${port}` };
}

/** Hugging Face cache directory of a repo id, as the hub lays it out. */
export function hfCacheDir(hfHome: string, model: string): string {
  return `${hfHome.replace(/\/+$/, "")}/hub/models--${model.replace(/\//g, "--")}`;
}
