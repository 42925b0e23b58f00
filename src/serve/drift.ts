/**
 * What changed on a node since sm121 served it, from its state (./probe): seed 001's restart rule
 * (alreadyServing, runsThisLaunch) and the drift the plan, the up, `pulumi refresh` and `sm121
 * status` say (driftFindings), with the .env key diff.
 */
import type { NodeBundle } from "../render/types";
import { diffKeys, parseEnvFile } from "../render/envreader";
import { isOwnFile, launchIdentityOf, sameLaunch } from "../render/launch";
import { parseTime } from "./outcome";
import { liveWords } from "./liveness";
import { envPathOf, mountedPaths, type NodeState } from "./probe";
import { looksSecret } from "../text/secrets";
import { notRunningMsg } from "../targets/common";
import { listMsg, msg, type Msg } from "../text/messages";

/**
 * Seed 001's restart rule: the node already runs this bundle when the recorded identity is the
 * same, nobody edited a file since we wrote it, and the engine started after the last change of
 * every file it reads or mounts, on the image its reference names now.
 */
export function alreadyServing(nb: NodeBundle, st: NodeState): boolean {
  return st.recorded?.identity === nb.identity && sameFiles(st) && (!nb.runs || runsCurrent(nb, st));
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
