/** Phase A: preflight and the node's current state, parsed (the liveness of a serving engine: ./liveness). */
import type { Host } from "../remote";
import type { NodeModelFacts } from "../render/memfit";
import type { NodeBundle } from "../render/types";
import { addModelFact } from "./modelprobe";
import { isOwnFile } from "../render/launch";
import { completeness, parseManifest } from "./hfcache";
import { ownerOf, type Holder } from "./owner";
import { liveCheckOf, livenessScript, type LiveCheck } from "./liveness";
import { preflightScript, type ProbeOptions } from "./steps";
import { loadingOr } from "./loading";
import { lifeOf, type NodeLife } from "./nodelife";
import { passiveOf, passiveScript } from "./passive";
import { quote } from "../text/shell";
import { stringOf } from "../text/unknown";
import { envFileOf } from "../render/node";
import type { NodeRecord, RecordOf } from "../protocol";
import { msg, type Msg } from "../text/messages";

export interface FailedCheck {
  check: string;
  subject: string;
  why: string;
  fatal: boolean;
  /** "hf-cache": the model, and what its revision lacks in the cache (the first few). */
  model?: { repo: string; revision: string };
  missing?: string[];
}

/** How many of an incomplete checkpoint's missing files a message names. */
const FIRST_MISSING = 3;

/**
 * An HF-cache check's record: the listing of the repo dir matched against the revision, by the
 * model cache's own rule (serve/hfcache): its snapshot, every link's blob, every indexed shard.
 */
function hfCacheFinding(r: RecordOf<"hfCache">): FailedCheck | undefined {
  const c = r.check;
  if (c.model === undefined) return undefined;
  const listing = Buffer.from(r.listing64, "base64").toString("utf8");
  const missing = completeness(parseManifest(listing), c.model.revision).missing;
  return missing.length === 0 ? undefined : { ...c, missing };
}

export interface NodeState {
  failed: FailedCheck[];
  running: boolean;
  startedAt?: string;
  /** Why the engine does not run, in words ("container gone", "container exited"). */
  detail?: string;
  /** Other deployments this node holds (a node moved to this deployment still runs them). */
  others: string[];
  /** Every deployment directory on the node (this one's too), with its owner and displacement. */
  holders: Holder[];
  /**
   * sm121's record on the node: identity, launch identity (none in an older record) and the
   * sha256 of each file as written.
   */
  recorded?: { identity: string; launch?: string; files: Record<string, string> };
  files: Record<string, { sha256: string; ctime: number }>;
  /** The running container's bind-mounted files (`docker inspect`), by host path, with their change time. */
  containerMounts?: Record<string, number>;
  /** The image the container runs and the one the bundle's reference names now (their IDs). */
  image?: { runs: string; tag: string };
  clients?: number;
  /** The current .env without secret lines (script recipes). */
  envText?: string;
  /** The node's memory and the checkpoint's config and size in its HF cache, for the memory fit. */
  model?: NodeModelFacts;
  /** Whether the engine still produces a token (the plan-time look's liveness check). */
  live?: LiveCheck;
  /** sm121's record of a stop that failed here: when, and the stop's last lines. */
  stopFailed?: { at: string; lines: string };
  /** What happened to it here between runs: a reboot, the tripwire, the keeper (./nodelife). */
  life?: NodeLife;
}

/**
 * Files whose change after the engine's start needs a restart even when the identity is the same
 * (seed 001): the files the engine reads and every mount source; not sm121's own (render/launch).
 */
export function mountedPaths(nb: NodeBundle): string[] {
  const mounts = nb.preflight.filter((c) => c.mountSource === true).map((c) => c.subject);
  return [...new Set([...nb.files.filter((f) => !isOwnFile(nb, f.path)).map((f) => f.path), ...mounts])];
}

/** Files the look reads (sha256 and change time): every file sm121 wrote, and the mounted ones. */
export function watchedPaths(nb: NodeBundle): string[] {
  return [...new Set([...nb.files.map((f) => f.path), ...mountedPaths(nb)])];
}

export function envPathOf(nb: NodeBundle): string | undefined {
  return envFileOf(nb)?.path;
}

/** A failed preflight check, as a message (its subject and the check's own reason are the node's values). */
export function describeCheck(f: FailedCheck): Msg {
  const { subject, why } = f;
  switch (f.check) {
    case "roce":
      return msg("serve.check.roce", { why });
    case "image":
      return msg("serve.check.image", { subject, why });
    case "command":
      return msg("serve.check.command", { subject, why });
    case "vllm-container":
      return msg("serve.check.vllmContainer", { subject, why });
    case "docker":
      return msg("state.asFound", { text: why });
    case "hf-cache": {
      const m = f.missing ?? [];
      const first = m.length === 0 ? msg("serve.check.notThere") : m.slice(0, FIRST_MISSING).join("; ");
      const more = m.length > FIRST_MISSING ? msg("serve.check.andMore", { count: m.length - FIRST_MISSING }) : "";
      const what = f.model === undefined ? msg("serve.check.theModel") : `${f.model.repo}@${f.model.revision}`;
      return msg("serve.check.hfCache", { what, subject, first, more, why });
    }
    default:
      return msg("serve.check.missing", { subject, why });
  }
}

/** The node's state against the bundle; `timeoutMs` bounds a look that must not hang the plan. */
export async function probeNode(
  host: Host,
  nb: NodeBundle,
  o: ProbeOptions = {},
  timeoutMs?: number,
): Promise<NodeState> {
  const script = preflightScript(nb, watchedPaths(nb), envPathOf(nb), o);
  const res = await host.run(script, { step: "preflight", ...(timeoutMs !== undefined && { timeoutMs }) });
  return parseProbe(res.records);
}

/** The records of a probe script (preflightScript), as a NodeState. */
export function parseProbe(records: readonly NodeRecord[]): NodeState {
  const model: NodeModelFacts = {};
  const st: NodeState = { failed: [], running: false, files: {}, others: [], holders: [], model };
  const holder = (n: string): Holder => {
    const found = st.holders.find((h) => h.deployment === n);
    if (found !== undefined) return found;
    const h: Holder = { deployment: n, held: false };
    st.holders.push(h);
    return h;
  };
  for (const r of records) {
    if (!addModelFact(model, r)) addToState(st, r, holder);
  }
  return st;
}

/** One record of the probe script into the node's state. */
function addToState(st: NodeState, r: NodeRecord, holder: (deployment: string) => Holder): void {
  switch (r.kind) {
    case "holder":
      holder(r.deployment).held = r.held;
      return;
    case "holderOwner": {
      const o = ownerOf(r.owner);
      if (o !== undefined) holder(r.deployment).owner = o;
      return;
    }
    case "displaced": {
      const o = ownerOf(r.by?.["owner"]);
      const deployment = r.by?.["deployment"];
      if (typeof deployment !== "string") return;
      holder(r.deployment).displacedBy = { deployment, ...(o !== undefined && { owner: o }) };
      return;
    }
    case "hfCache": {
      const f = hfCacheFinding(r);
      if (f !== undefined) st.failed.push(f);
      return;
    }
    case "check":
      st.failed.push({ check: r.check, subject: r.subject, why: r.why, fatal: r.fatal });
      return;
    case "other":
      st.others.push(r.deployment);
      return;
    case "state": {
      const s = r.state;
      if (s !== null && typeof s["identity"] === "string") {
        const files = (s["files"] ?? {}) as Record<string, string>;
        const launch = s["launch"];
        st.recorded = { identity: s["identity"], files, ...(typeof launch === "string" && { launch }) };
      }
      return;
    }
    case "status":
      st.running = r.running;
      if (r.startedAt !== null) st.startedAt = r.startedAt;
      if (r.detail !== undefined) st.detail = r.detail;
      return;
    case "mount": {
      const at = Buffer.from(r.path64, "base64").toString("utf8");
      st.containerMounts = { ...st.containerMounts, [at]: r.ctime };
      return;
    }
    case "imageIds":
      st.image = { runs: r.runs, tag: r.tag };
      return;
    case "watched":
      st.files[r.file] = { sha256: r.sha256, ctime: r.ctime };
      return;
    case "clients":
      st.clients = r.clients;
      return;
    case "envText":
      st.envText = Buffer.from(r.text64, "base64").toString("utf8");
      return;
    case "life":
      st.life = lifeOf(r);
      return;
    case "stopFailed":
      st.stopFailed = { at: stringOf(r.stopFailed["at"]), lines: stringOf(r.stopFailed["lines"]) };
      return;
    default:
      return;
  }
}

/**
 * The plan-time look at one deployment on a node: the probe and, where the engine runs this
 * bundle, the liveness check, in one script (a part of the node's one look script: serve/observe).
 * The node spends the one-token completion only where its record names this bundle's identity
 * (preflightScript reads state.json into `$state`, and the identity is the first field sm121
 * writes there); the verdict counts only where the probe also finds the engine running.
 */
export function servingScript(nb: NodeBundle, o: ProbeOptions, livenessS: number, passive = false): string {
  const recorded = quote(`{"identity":"${nb.identity}"`);
  const check = passive ? passiveScript(nb) : livenessScript(nb, livenessS);
  const live = canServe(nb) ? [`case "$state" in ${recorded}*) ( ${check} ) || true;; esac`] : [];
  return [preflightScript(nb, watchedPaths(nb), envPathOf(nb), o), ...live].join("\n");
}

/** How long a node's look may take for `n` deployments with liveness checks (each curl has its own timeout). */
export function servingTimeoutMs(lookMs: number, n: number, livenessS: number): number {
  return lookMs + n * (livenessS + 30) * 1000;
}

/**
 * The node's state from its part of the look (servingScript). `asks` is true where the engine runs
 * this bundle and the script could not match the record (one an older sm121 wrote): the liveness
 * check is then asked on its own (probeLiveness).
 */
export function servingState(
  nb: NodeBundle,
  records: readonly NodeRecord[],
  livenessS: number,
  loadingS = 0,
  passive = false,
): {
  st: NodeState;
  asks: boolean;
} {
  const st = parseProbe(records);
  if (!canServe(nb) || !st.running || st.recorded?.identity !== nb.identity) return { st, asks: false };
  // A protected node without the allowance gets no request: what the node shows is all there is.
  if (passive) {
    const p = passiveOf(records, livenessS);
    if (p !== undefined) st.live = p;
    return { st, asks: false };
  }
  const live = liveCheckOf(records, livenessS);
  if (live !== undefined) st.live = loadingOr(live, st.startedAt, loadingS, st.life?.readyAt);
  return { st, asks: live === undefined };
}

const canServe = (nb: NodeBundle) => nb.api !== undefined && nb.runs;
