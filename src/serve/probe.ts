/** Phase A: preflight and the node's current state, parsed. */
import type { Host } from "../remote";
import type { NodeModelFacts } from "../render/memfit";
import type { NodeBundle } from "../render/types";
import { diffKeys, parseEnvFile } from "../render/envreader";
import { addModelFact } from "./modelprobe";
import { parseTime } from "./outcome";
import { preflightScript, type ProbeOptions } from "./steps";

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
  /** Why the engine does not run, in words ("container gone", "container exited"). */
  detail?: string;
  /** Other deployments this node holds (a node moved to this deployment still runs them). */
  others: string[];
  /** sm121's record on the node: identity and the sha256 of each file as written. */
  recorded?: { identity: string; files: Record<string, string> };
  files: Record<string, { sha256: string; ctime: number }>;
  clients?: number;
  /** The current .env without secret lines (script recipes). */
  envText?: string;
  /** The node's memory and the checkpoint's config and size in its HF cache, for the memory fit. */
  model?: NodeModelFacts;
}

/** Files whose change needs a restart even when the identity is the same (seed 001). */
export function watchedPaths(nb: NodeBundle): string[] {
  const mounts = nb.preflight.filter((c) => c.kind === "file" && c.why.startsWith("mount source")).map((c) => c.subject);
  return [...new Set([...nb.files.map((f) => f.path), ...mounts])];
}

export function envPathOf(nb: NodeBundle): string | undefined {
  return nb.files.find((f) => f.path.endsWith("/.env") && f.backup && nb.envKeys !== undefined)?.path;
}

/** A failed preflight check, in words. */
export function describeCheck(f: FailedCheck): string {
  switch (f.check) {
    case "roce":
      return `more than two RoCE devices: ${f.why}`;
    case "image":
      return `no image ${f.subject} (${f.why})`;
    case "command":
      return `no ${f.subject} on PATH (${f.why})`;
    case "vllm-container":
      return `another vLLM container runs on the node: ${f.subject} (${f.why})`;
    case "docker":
      return f.why;
    case "hf-cache":
      return `not in the HF cache: ${f.subject} (${f.why})`;
    default:
      return `missing ${f.subject} (${f.why})`;
  }
}

export async function probeNode(host: Host, nb: NodeBundle, o: ProbeOptions = {}): Promise<NodeState> {
  const res = await host.run(preflightScript(nb, watchedPaths(nb), envPathOf(nb), o), { step: "preflight" });
  return parseProbe(res.records, res.stdout);
}

/** The records of a probe script (preflightScript), as a NodeState. */
export function parseProbe(records: ReadonlyArray<Record<string, unknown>>, stdout: string): NodeState {
  const model: NodeModelFacts = {};
  const st: NodeState = { failed: [], running: false, files: {}, others: [], model };
  for (const r of records) {
    if (addModelFact(model, r)) continue;
    if (typeof r["check"] === "string") st.failed.push(r as unknown as FailedCheck);
    else if (typeof r["other"] === "string") st.others.push(r["other"]);
    else if ("state" in r) {
      const s = r["state"] as { identity?: unknown; files?: unknown } | null;
      if (s !== null && typeof s.identity === "string") st.recorded = { identity: s.identity, files: (s.files ?? {}) as Record<string, string> };
    } else if (typeof r["running"] === "boolean") {
      st.running = r["running"];
      if (typeof r["startedAt"] === "string") st.startedAt = r["startedAt"];
      if (typeof r["detail"] === "string") st.detail = r["detail"];
    } else if (typeof r["file"] === "string") {
      st.files[r["file"]] = { sha256: String(r["sha256"]), ctime: Number(r["ctime"]) };
    } else if (typeof r["clients"] === "number") st.clients = r["clients"];
  }
  const m = /@sm121-env-begin\n([\s\S]*?)@sm121-env-end/.exec(stdout);
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

export type DriftKind = "edited" | "removed" | "no-record" | "other-bundle" | "not-running" | "newer-mount";

export interface Drift {
  kind: DriftKind;
  files: string[];
  words: string;
}

/**
 * What changed on the node since sm121 served it: the one rule behind the plan of `pulumi
 * preview`, the repair of `pulumi up`, `pulumi refresh` and `sm121 status`. Empty when the node
 * runs exactly what was written.
 */
export function driftFindings(nb: NodeBundle, st: NodeState): Drift[] {
  const out: Drift[] = [];
  for (const [p, sha] of Object.entries(st.recorded?.files ?? {})) {
    const now = st.files[p];
    if (now?.sha256 === sha) continue;
    if (now === undefined) out.push({ kind: "removed", files: [p], words: `${p} was removed on the node` });
    else if (p === envPathOf(nb) && st.envText !== undefined && nb.envKeys !== undefined) out.push({ kind: "edited", files: [p], words: `.env edited on the node: ${keyChanges(nb.envKeys, parseEnvFile(st.envText).keys) || "comments or layout only"}` });
    else out.push({ kind: "edited", files: [p], words: `${p} edited on the node` });
  }
  if (st.recorded === undefined) out.push({ kind: "no-record", files: [], words: "no sm121 record on the node" });
  else if (st.recorded.identity !== nb.identity) out.push({ kind: "other-bundle", files: [], words: "the node runs another bundle" });
  if (nb.runs && !st.running && st.recorded !== undefined) out.push({ kind: "not-running", files: [], words: `the engine is not running (${st.detail ?? "not found"})` });
  if (nb.runs && st.running && st.recorded?.identity === nb.identity && out.length === 0) {
    const started = parseTime(st.startedAt);
    const newer = watchedPaths(nb).filter((p) => started !== undefined && (st.files[p]?.ctime ?? 0) * 1000 > started + 999);
    if (newer.length > 0) out.push({ kind: "newer-mount", files: newer, words: `changed after the engine started: ${newer.join(", ")} (a running engine keeps the old file)` });
  }
  return out;
}

/**
 * The plan's drift, in words, each a reason this up repairs the node. A first serve or a new
 * bundle (no record, another identity) is not drift here: the diff itself says so.
 */
export function driftOf(nb: NodeBundle, st: NodeState): string[] {
  return driftFindings(nb, st).filter((d) => d.kind !== "no-record" && d.kind !== "other-bundle").map((d) => d.words);
}

/**
 * Seed 001's preflight key diff: the keys of the node's current .env against the render, or
 * undefined when they are the same (or the node has no .env yet, or the recipe none).
 */
export function envKeyDiff(nb: NodeBundle, st: NodeState): string | undefined {
  if (nb.envKeys === undefined || st.envText === undefined) return undefined;
  const changes = keyChanges(parseEnvFile(st.envText).keys, nb.envKeys);
  return changes === "" ? undefined : `.env keys, node -> render: ${changes}`;
}

/** `MAX_NUM_SEQS 4 -> 8, FOO added (1), BAR removed`: the keys of `to` against `from` ("" when the same). */
function keyChanges(from: Record<string, string>, to: Record<string, string>): string {
  const d = diffKeys(from, to);
  const short = (v: string | undefined) => (v === undefined ? "" : v.length > 32 ? `${v.slice(0, 29)}...` : v);
  return [
    ...d.changed.map((k) => `${k} ${short(from[k])} -> ${short(to[k])}`),
    ...d.added.map((k) => `${k} added (${short(to[k])})`),
    ...d.removed.map((k) => `${k} removed`),
  ].join(", ");
}
