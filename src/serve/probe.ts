/** Phase A: preflight and the node's current state, parsed. */
import type { Host } from "../remote";
import type { NodeBundle } from "../render/types";
import { parseTime } from "./outcome";
import { preflightScript } from "./steps";

export interface FailedCheck {
  check: string;
  subject: string;
  why: string;
  fatal: boolean;
}

export interface NodeState {
  failed: FailedCheck[];
  running: boolean;
  startedAt?: string;
  /** sm121's record on the node: identity and the sha256 of each file as written. */
  recorded?: { identity: string; files: Record<string, string> };
  files: Record<string, { sha256: string; ctime: number }>;
  clients?: number;
  /** The current .env without secret lines (script recipes). */
  envText?: string;
}

/** Files whose change needs a restart even when the identity is the same (seed 001). */
export function watchedPaths(nb: NodeBundle): string[] {
  const mounts = nb.preflight.filter((c) => c.kind === "file" && c.why.startsWith("mount source")).map((c) => c.subject);
  return [...new Set([...nb.files.map((f) => f.path), ...mounts])];
}

export function envPathOf(nb: NodeBundle): string | undefined {
  return nb.files.find((f) => f.path.endsWith("/.env") && f.backup && nb.envKeys !== undefined)?.path;
}

export async function probeNode(host: Host, nb: NodeBundle): Promise<NodeState> {
  const res = await host.run(preflightScript(nb, watchedPaths(nb), nb.api?.port, envPathOf(nb)), { step: "preflight" });
  const st: NodeState = { failed: [], running: false, files: {} };
  for (const r of res.records) {
    if (typeof r["check"] === "string") st.failed.push(r as unknown as FailedCheck);
    else if ("state" in r) {
      const s = r["state"] as { identity?: unknown; files?: unknown } | null;
      if (s !== null && typeof s.identity === "string") st.recorded = { identity: s.identity, files: (s.files ?? {}) as Record<string, string> };
    } else if (typeof r["running"] === "boolean") {
      st.running = r["running"];
      if (typeof r["startedAt"] === "string") st.startedAt = r["startedAt"];
    } else if (typeof r["file"] === "string") {
      st.files[r["file"]] = { sha256: String(r["sha256"]), ctime: Number(r["ctime"]) };
    } else if (typeof r["clients"] === "number") st.clients = r["clients"];
  }
  const m = /@sm121-env-begin\n([\s\S]*?)@sm121-env-end/.exec(res.stdout);
  if (m !== null) st.envText = m[1] ?? "";
  return st;
}

/**
 * Seed 001's restart rule: the node already runs this bundle when the recorded identity is the
 * same, nobody edited a file since we wrote it, and the engine started after the last change of
 * every file it reads or mounts.
 */
export function alreadyServing(nb: NodeBundle, st: NodeState): boolean {
  if (!nb.runs) return st.recorded?.identity === nb.identity && sameFiles(st);
  if (!st.running || st.recorded?.identity !== nb.identity || !sameFiles(st)) return false;
  const started = parseTime(st.startedAt);
  if (started === undefined) return false;
  return watchedPaths(nb).every((p) => {
    const f = st.files[p];
    return f === undefined || f.ctime * 1000 <= started + 999;
  });
}

function sameFiles(st: NodeState): boolean {
  const rec = st.recorded?.files ?? {};
  return Object.entries(rec).every(([p, sha]) => st.files[p]?.sha256 === sha);
}

/** Drift for refresh: a file differs from what sm121 wrote, or the engine is not running. */
export function driftOf(nb: NodeBundle, st: NodeState): string | undefined {
  const rec = st.recorded?.files ?? {};
  const edited = Object.entries(rec).filter(([p, sha]) => st.files[p]?.sha256 !== sha).map(([p]) => p);
  if (edited.length > 0) return `edited on the node: ${edited.join(", ")}`;
  if (st.recorded === undefined) return "no sm121 record on the node";
  if (st.recorded.identity !== nb.identity) return "the node runs another bundle";
  if (nb.runs && !st.running) return "the engine is not running";
  return undefined;
}
