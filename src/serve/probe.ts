/** Phase A: preflight and the node's current state, parsed (the liveness of a serving engine: ./liveness). */
import type { Host } from "../remote";
import type { NodeModelFacts } from "../render/memfit";
import type { NodeBundle } from "../render/types";
import { diffKeys, parseEnvFile } from "../render/envreader";
import { addModelFact } from "./modelprobe";
import { isOwnFile, launchIdentityOf, sameLaunch } from "../render/launch";
import { completeness, parseManifest } from "./hfcache";
import { parseTime } from "./outcome";
import { ownerOf, type Holder } from "./owner";
import { liveCheckOf, livenessScript, liveWords, type LiveCheck } from "./liveness";
import { preflightScript, type ProbeOptions } from "./steps";
import { loadingOr } from "./loading";
import { lifeOf, type NodeLife } from "./nodelife";
import { passiveOf, passiveScript } from "./passive";
import { quote } from "../text/shell";
import { stringOf } from "../text/unknown";
import { looksSecret } from "../text/secrets";
import { notRunningMsg } from "../targets/common";
import { envFileOf } from "../render/node";
import type { NodeRecord, RecordOf } from "../protocol";
import { listMsg, msg, type Msg } from "../text/messages";

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

/**
 * Seed 001's restart rule: the node already runs this bundle when the recorded identity is the
 * same, nobody edited a file since we wrote it, and the engine started after the last change of
 * every file it reads or mounts, on the image its reference names now.
 */
export function alreadyServing(nb: NodeBundle, st: NodeState): boolean {
  if (!nb.runs) return st.recorded?.identity === nb.identity && sameFiles(st);
  return st.recorded?.identity === nb.identity && sameFiles(st) && runsCurrent(nb, st);
}

/** The engine runs, started after the last change of every file it reads or mounts, on its reference's image. */
function runsCurrent(nb: NodeBundle, st: NodeState): boolean {
  return st.running && startedAfter(nb, st) && !tagMoved(st);
}

/** The image reference now names another image than the one the container runs (a tag moved). */
const tagMoved = (st: NodeState): st is NodeState & { image: { runs: string; tag: string } } =>
  st.image !== undefined && st.image.runs !== st.image.tag;

/** An image ID as `docker images` shows it: 12 hex digits. */
const shortId = (id: string) => id.replace(/^sha256:/, "").slice(0, 12);

/** The engine started after the last change of every file it reads or mounts. */
function startedAfter(nb: NodeBundle, st: NodeState): boolean {
  return parseTime(st.startedAt) !== undefined && changedSinceStart(nb, st).length === 0;
}

/**
 * The files the engine reads or mounts that changed after it started: those sm121 renders and
 * watches, and every file the running container has bind-mounted (start.sh's own mounts too).
 */
function changedSinceStart(nb: NodeBundle, st: NodeState): string[] {
  const started = parseTime(st.startedAt);
  if (started === undefined) return [];
  const ctimes: Array<[string, number]> = [
    ...mountedPaths(nb).flatMap((p): Array<[string, number]> => {
      const f = st.files[p];
      return f === undefined ? [] : [[p, f.ctime]];
    }),
    ...Object.entries(st.containerMounts ?? {}),
  ];
  return [...new Set(ctimes.filter(([, c]) => c * 1000 > started + 999).map(([p]) => p))];
}

/**
 * Seed 001's .env identity: the node runs what this bundle would start (render/launch), as its
 * record says (the launch identity; for a record an older sm121 wrote, the identity of `previous`,
 * the bundle the state holds, whose launch is this one, or the files that bundle wrote, each as it wrote it: an
 * older DGPP staging recorded another identity), the files are as written, and the engine started after every
 * file it reads. Then the up checks it and restarts nothing.
 */
export function runsThisLaunch(nb: NodeBundle, st: NodeState, previous?: NodeBundle): boolean {
  const rec = st.recorded;
  if (rec === undefined || !sameFiles(st)) return false;
  if (nb.runs && !runsCurrent(nb, st)) return false;
  const want = launchIdentityOf(nb);
  if (rec.launch !== undefined) return rec.launch === want;
  if (previous === undefined || !sameLaunch(previous, nb)) return false;
  const wrote = previous.files.filter((f) => !isOwnFile(previous, f.path));
  const asWritten = wrote.length > 0 && wrote.every((f) => rec.files[f.path] === f.sha256);
  return rec.identity === previous.identity || asWritten;
}

function sameFiles(st: NodeState): boolean {
  const rec = st.recorded?.files ?? {};
  return Object.entries(rec).every(([p, sha]) => st.files[p]?.sha256 === sha);
}

/** The kinds of drift the look finds (driftFindings); `sm121 status --json` names them too. */
export const DRIFT_KINDS = [
  "edited",
  "removed",
  "no-record",
  "other-bundle",
  "not-running",
  "newer-mount",
  "tag-moved",
  "hung",
  "stop-failed",
] as const;
export type DriftKind = (typeof DRIFT_KINDS)[number];

/** Drift of the engine's health, which an up repairs by a restart that counts against sm121:liveness. */
export const HEALTH_DRIFT: ReadonlySet<DriftKind> = new Set(["not-running", "hung"]);

export interface Drift {
  kind: DriftKind;
  files: string[];
  /**
   * What was found, as a message naming the node ("spark2: ..."; the node is an argument): said
   * where it is printed, in the reader's language.
   */
  said: Msg;
}

/**
 * What changed on the node since sm121 served it: the one rule behind the plan of `pulumi
 * preview`, the repair of `pulumi up`, `pulumi refresh` and `sm121 status`. Empty when the node
 * runs exactly what was written.
 */
export function driftFindings(nb: NodeBundle, st: NodeState): Drift[] {
  const out: Drift[] = [];
  const node = nb.node;
  for (const [p, sha] of Object.entries(st.recorded?.files ?? {})) {
    const now = st.files[p];
    if (now?.sha256 === sha) continue;
    if (now === undefined)
      out.push({ kind: "removed", files: [p], said: msg("serve.look.removed", { node, file: p }) });
    else if (p === envPathOf(nb) && st.envText !== undefined && nb.envKeys !== undefined) {
      const changes = keyChanges(nb.envKeys, parseEnvFile(st.envText).keys);
      const what = changes.length === 0 ? msg("serve.look.layoutOnly") : listMsg(changes);
      out.push({ kind: "edited", files: [p], said: msg("serve.look.envEdited", { node, changes: what }) });
    } else out.push({ kind: "edited", files: [p], said: msg("serve.look.edited", { node, file: p }) });
  }
  if (st.recorded === undefined) out.push({ kind: "no-record", files: [], said: msg("serve.look.noRecord", { node }) });
  else if (st.recorded.identity !== nb.identity)
    out.push({ kind: "other-bundle", files: [], said: msg("serve.look.otherBundle", { node }) });
  if (st.stopFailed !== undefined) {
    const said = msg("serve.look.stopFailed", { node, at: st.stopFailed.at, lines: st.stopFailed.lines });
    out.push({ kind: "stop-failed", files: [], said });
  }
  if (nb.runs && !st.running && st.recorded !== undefined) {
    // The status script's reason in the reader's language; docker's own error as docker printed it.
    const detail = st.detail === undefined ? msg("serve.look.notFound") : notRunningMsg(st.detail);
    out.push({ kind: "not-running", files: [], said: msg("serve.look.notRunning", { node, detail }) });
  }
  if (st.running && st.live?.verdict === "hung" && st.recorded?.identity === nb.identity) {
    out.push({ kind: "hung", files: [], said: liveWords(node, st.live) });
  }
  if (nb.runs && st.running && st.recorded?.identity === nb.identity && out.length === 0) {
    const newer = changedSinceStart(nb, st);
    if (newer.length > 0)
      out.push({
        kind: "newer-mount",
        files: newer,
        said: msg("serve.look.newerMount", { node, files: newer.join(", ") }),
      });
    if (tagMoved(st) && nb.image !== undefined) {
      const [from, to] = [shortId(st.image.runs), shortId(st.image.tag)];
      out.push({ kind: "tag-moved", files: [], said: msg("serve.look.tagMoved", { node, image: nb.image, from, to }) });
    }
  }
  return out;
}

/**
 * The plan's drift, as messages, each a reason this up repairs the node. A first serve or a new
 * bundle (no record, another identity) is not drift here: the diff itself says so.
 */
export function driftOf(nb: NodeBundle, st: NodeState): Drift[] {
  return driftFindings(nb, st).filter((d) => d.kind !== "no-record" && d.kind !== "other-bundle");
}

/**
 * Seed 001's preflight key diff: the keys of the node's current .env against the render, or
 * undefined when they are the same (or the node has no .env yet, or the recipe none).
 */
export function envKeyDiff(nb: NodeBundle, st: NodeState): Msg | undefined {
  if (nb.envKeys === undefined || st.envText === undefined) return undefined;
  const changes = keyChanges(parseEnvFile(st.envText).keys, nb.envKeys);
  return changes.length === 0 ? undefined : msg("serve.look.envKeys", { changes: listMsg(changes) });
}

/**
 * `MAX_NUM_SEQS 4 -> 8`, `FOO added (1)`, `BAR removed`: the keys of `to` against `from` (none when
 * the same). A key whose name or either value looks secret (text/secrets) is said changed or added,
 * never with its value: these words go into the plan, the state and the output.
 */
function keyChanges(from: Record<string, string>, to: Record<string, string>): Msg[] {
  const d = diffKeys(from, to);
  const short = (v: string | undefined) => (v === undefined ? "" : v.length > 32 ? `${v.slice(0, 29)}...` : v);
  const hidden = (key: string) => looksSecret(key, from[key] ?? "") || looksSecret(key, to[key] ?? "");
  return [
    ...d.changed.map((key) =>
      hidden(key)
        ? msg("serve.look.keySecretChanged", { key })
        : msg("serve.look.keyChanged", { key, from: short(from[key]), to: short(to[key]) }),
    ),
    ...d.added.map((key) =>
      hidden(key)
        ? msg("serve.look.keySecretAdded", { key })
        : msg("serve.look.keyAdded", { key, value: short(to[key]) }),
    ),
    ...d.removed.map((key) => msg("serve.look.keyRemoved", { key })),
  ];
}
