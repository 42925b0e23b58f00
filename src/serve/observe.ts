/**
 * Plan time: one read-only look at every node of the site, before Pulumi diffs anything. One SSH
 * connection per node, all nodes in parallel: on each, the probe of every deployment the node
 * serves (or only the list of what sm121 holds there), the liveness of each engine that runs its
 * bundle (one 1-token completion). (The gateway file is looked at by ./sitefile's lookPlaced.) What it
 * finds becomes messages (keys and arguments, said in the reader's language where they are printed)
 * in the plan and the reason an up repairs a node: an engine that died or
 * hangs, a file edited on the node, a node that still runs another deployment, a gateway file
 * edited or removed. The resources' diffs stay pure: they only read what this look found, as an
 * input. A node the look cannot reach (or whose look fails or times out) is unknown, never drift.
 */
import { CommandError, TransportError, type Dialer, type Host } from "../remote";
import { transportFix } from "../remote/errors";
import type { SiteNode } from "../recipe/types";
import type { NodeModelFacts } from "../render/memfit";
import { nodeConn } from "../render/node";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { msg, SaidError, type Msg } from "../text/messages";
import { joinNode } from "../text/shell";
import { describeCheck, parseProbe } from "./probe";
import { alreadyServing, driftFindings, driftOf, envKeyDiff, HEALTH_DRIFT } from "./drift";
import { servingScript, servingState, servingTimeoutMs, type NodeState } from "./probe";
import { liveWords, probeLiveness } from "./liveness";
import { loadingOr } from "./loading";
import { printRecord, recordsOf, type NodeRecord } from "../protocol";
import { dockerLookScript, imageIdsOf } from "../targets/dockerlook";
import { ownerDrift, sameOwner, type Holder, type Owner } from "./owner";
import { deploymentOf, othersProbe } from "./registry";
import { lifeFindings, type Lives } from "./lifeplan";
import type { NodeLife } from "./nodelife";

/**
 * What the look found is messages (src/text/messages), each naming its node ("spark2: ..."): the
 * same keys and arguments in every language, so that an input Pulumi compares does not change
 * with the reader's.
 */
export interface SiteObservation {
  /** Per deployment: what this up will repair or stop first, one message per finding. */
  drift: Record<string, Msg[]>;
  /** Per deployment: the part of its drift that is the engine's health (dead or hung). */
  health: Record<string, Msg[]>;
  /** Per deployment: its nodes the look could not see, one message each with the error and the fix. */
  unknown: Record<string, Msg[]>;
  /** Nodes no deployment uses that the look could not reach, with the same message. */
  unreachable: Msg[];
  /**
   * Per deployment: preflight findings (fatal ones fail a preview with sm121:preflight), and
   * notes that are no fault (the .env key diff against the node).
   */
  preflight: Record<string, { fatal: Msg[]; warnings: Msg[]; notes: Msg[] }>;
  /**
   * Deployments of this stack (or of no recorded owner) a node holds although the site no longer
   * puts them there: this up stops them. Another stack's are left alone, and not listed.
   */
  leaving: Array<{ node: string; deployment: string; protected: boolean }>;
  /**
   * Nodes that move to another deployment of the site: what this up stops first there (also in
   * that deployment's drift), for the plan to say even where the deployment is new.
   */
  moving: Msg[];
  /** Deployments the site no longer declares that some node still holds (stopping, or a failed stop). */
  lingering: string[];
  /** Per node the look reached: every deployment directory there, with its owner (serve/owner). */
  holders: Record<string, Holder[]>;
  /** Per node: its memory and the checkpoint's files in its HF cache (the memory fit's facts). */
  models: Record<string, NodeModelFacts>;
  /**
   * Deployments that every node already serves as this bundle (seed 001's restart rule), with no
   * drift and a healthy engine: the look finds nothing to restart or repair there. (What only the
   * state knows, a rotated secret or a failed last up, may still restart one.)
   */
  steady: string[];
  /** Per node the look reached: the ID of each image it was asked about (`images`), null where it has none. */
  images: Record<string, Record<string, string | null>>;
  /** Per deployment, per node: what happened there between runs (./nodelife). */
  life: Lives;
  /** The protected nodes whose engines were checked without a request (./passive), what it saw. */
  passive: Msg[];
  /**
   * Per deployment: the nodes whose last up applied another bundle than the declared one (a recipe
   * or the site changed since), which the drift leaves to the plan's diff. `sm121 keep` leaves them.
   */
  unapplied: Record<string, Msg[]>;
}

export interface LookOptions {
  /** Also run the preflight checks (a preview with sm121:preflight); else only the nodes' state. */
  checks: boolean;
  /** sm121:liveness timeout: seconds a serving engine gets for one token. */
  livenessS: number;
  /** Where a node's `ssh` block stands, for the error line: "Pulumi.prod.yaml:14:7: sm121:nodes.spark2.ssh". */
  placeOf: (node: string) => string;
  /** This run's stack, against which the owners found on the nodes are read (serve/owner). */
  me?: Owner;
  /** Per node: the images whose IDs the look reports (the fabric's image check, fabric/resolve.serve). */
  images?: Readonly<Record<string, readonly string[]>>;
  /** Per node directory of a deployment: its readiness wait (observeSite sets it from the bundles). */
  loadingS?: ReadonlyMap<string, number>;
  /** SM121_ALLOW_PROTECTED: protected nodes whose engines the look may ask over HTTP (the others: ./passive). */
  allowProtected?: readonly string[];
}

/** A protected node the run may not ask over HTTP: its engines' liveness is passive (./passive). */
const passive = (nb: NodeBundle, o: LookOptions): boolean =>
  nb.protected && !(o.allowProtected ?? []).includes(nb.node);

/** What one node showed: each deployment's state there, or why it could not be seen. */
type Seen =
  | {
      ok: true;
      states: Map<string, NodeState>;
      held: string[];
      holders: Holder[];
      model?: NodeModelFacts;
      images: Record<string, string | null>;
    }
  | { ok: false; error: Msg };

/** How long one script of the look may take (a liveness check gets its own timeout on top). */
const LOOK_STEP_MS = 60_000;

/** The message of a node that could not be seen: its place, the error as the client saw it, the fix. */
function unseen(name: string, e: unknown, place: string): Msg {
  if (e instanceof TransportError)
    return msg("serve.unseenUnreachable", { place, node: name, detail: e.detail, fix: transportFix(e.kind, name) });
  // An error of sm121's own carries its message, said in the reader's language; a failed step's
  // one line, without its streams' tails.
  if (e instanceof SaidError) {
    return msg("serve.unseen", { place, node: name, first: e instanceof CommandError ? e.headline : e.said });
  }
  const first = (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "";
  return msg("serve.unseen", { place, node: name, first });
}

/**
 * A node's whole look as one script, so that it costs the node one channel and at most one docker
 * call: that call first (every container of its deployments and the images asked about), then
 * each deployment's part (its probe and liveness: probe.ts servingScript), each after a `lookPart`
 * record; a node that serves none of them lists what sm121 holds there instead.
 */
function nodeLookScript(
  node: SiteNode,
  here: readonly NodeBundle[],
  images: readonly string[],
  o: LookOptions,
): string {
  const containers = here.flatMap((nb) => (nb.containerName === undefined ? [] : [nb.containerName]));
  // The images asked about, and each container's own: whether its tag moved (./drift).
  const refs = [
    ...new Set([...images, ...here.flatMap((nb) => (nb.containerName === undefined ? [] : (nb.image ?? [])))]),
  ];
  const docker = containers.length > 0 || refs.length > 0 ? [dockerLookScript(containers, refs)] : [];
  if (here.length === 0) return [...docker, othersProbe(joinNode(node.stateDir, "deployments"), undefined)].join("\n");
  const opts = { checks: o.checks, clients: false, looked: true, hub: true };
  const parts = here.map((nb, i) =>
    [
      printRecord("lookPart", '"index":%d', String(i)),
      `( ${servingScript(nb, opts, o.livenessS, passive(nb, o))}\n)`,
    ].join("\n"),
  );
  return [...docker, ...parts].join("\n");
}

/** The records of each part of a node's look (nodeLookScript), in order; what came before the first part aside. */
function partsOf(records: readonly NodeRecord[]): { head: NodeRecord[]; parts: NodeRecord[][] } {
  const head: NodeRecord[] = [];
  const parts: NodeRecord[][] = [];
  for (const r of records) {
    if (r.kind === "lookPart") parts[r.index] = [];
    else (parts.length === 0 ? head : (parts[parts.length - 1] as NodeRecord[])).push(r);
  }
  return { head, parts };
}

async function look(name: string, node: SiteNode, here: NodeBundle[], dial: Dialer, o: LookOptions): Promise<Seen> {
  let host: Host | undefined;
  try {
    host = await dial.host(name, nodeConn(node));
    const h = host;
    const asked = o.images?.[name] ?? [];
    const script = nodeLookScript(node, here, asked, o);
    const timeoutMs = servingTimeoutMs(LOOK_STEP_MS, here.length, o.livenessS);
    const res = await h.run(script, { step: here.length === 0 ? "list sm121's deployments" : "preflight", timeoutMs });
    const { head, parts } = partsOf(res.records);
    const lines = recordsOf(head, "lookImage").map((r) => Buffer.from(r.line64, "base64").toString("utf8"));
    const images = imageIdsOf(lines, asked);
    if (here.length === 0) {
      const st = parseProbe(head);
      const model = st.model === undefined ? {} : { model: st.model };
      return { ok: true, states: new Map(), held: st.others, holders: st.holders, ...model, images };
    }
    const states = new Map<string, NodeState>();
    for (const [i, nb] of here.entries()) {
      const loadingS = o.loadingS?.get(nb.stateDir) ?? 0;
      const { st, asks } = servingState(nb, parts[i] ?? [], o.livenessS, loadingS, passive(nb, o));
      // A record the node's script could not match (one an older sm121 wrote): its check on its own.
      if (asks) {
        const live = await probeLiveness(h, nb, o.livenessS);
        if (live !== undefined) st.live = loadingOr(live, st.startedAt, loadingS, st.life?.readyAt);
      }
      states.set(nb.stateDir, st);
    }
    // What sm121 holds on the node: each probe lists the others.
    const own = new Set(here.map(deploymentOf));
    const held = [...new Set([...states.values()].flatMap((st) => st.others))].filter((d) => !own.has(d));
    const first = [...states.values()][0];
    // Every probe lists every deployment directory of the node with its owner: the first says it.
    const holders = first?.holders ?? [];
    return { ok: true, states, held, holders, ...(first?.model !== undefined && { model: first.model }), images };
  } catch (e) {
    return { ok: false, error: unseen(name, e, o.placeOf(name)) };
  } finally {
    host?.close();
  }
}

export async function observeSite(
  nodes: Readonly<Record<string, SiteNode>>,
  bundles: readonly DeploymentBundle[],
  dial: Dialer,
  o: LookOptions,
): Promise<SiteObservation> {
  const me = o.me;
  const serving = new Map<string, NodeBundle[]>();
  for (const b of bundles) for (const nb of b.nodes) serving.set(nb.node, [...(serving.get(nb.node) ?? []), nb]);
  const names = Object.keys(nodes);
  // An engine that answers nothing yet within its readiness wait is loading (serve/probe loadingOr).
  const loadingS = new Map(bundles.flatMap((b) => b.nodes.map((nb) => [nb.stateDir, b.readiness.timeoutS] as const)));
  const looks = names.map((n) => look(n, nodes[n] as SiteNode, serving.get(n) ?? [], dial, { ...o, loadingS }));
  const seen = await Promise.all(looks);
  const byNode = new Map(names.map((n, i) => [n, seen[i] as Seen]));
  const declared = new Set(bundles.map((b) => b.deployment));
  const life: Record<string, Record<string, NodeLife>> = {};
  const out: SiteObservation = {
    drift: {},
    health: {},
    unknown: {},
    unreachable: [],
    preflight: {},
    leaving: [],
    moving: [],
    lingering: [],
    models: {},
    holders: {},
    steady: [],
    images: {},
    life,
    passive: [],
    unapplied: {},
  };
  for (const b of bundles) {
    const drift: Msg[] = [];
    const health: Msg[] = [];
    const unknown: Msg[] = [];
    const pre = { fatal: [] as Msg[], warnings: [] as Msg[], notes: [] as Msg[] };
    const lives: Record<string, NodeLife> = {};
    let asDeclared = true;
    for (const nb of b.nodes) {
      const node = nb.node;
      const onNode = (text: Msg) => msg("state.onNode", { node, text });
      const s = byNode.get(nb.node);
      if (s === undefined) continue;
      if (!s.ok) {
        unknown.push(s.error);
        continue;
      }
      const st = s.states.get(nb.stateDir);
      asDeclared &&= st !== undefined && alreadyServing(nb, st);
      if (st === undefined) continue;
      // Deployments the site also puts on this node share it; others there stop first.
      for (const other of st.others.filter((x) => !(nb.neighbors ?? []).includes(x))) {
        const stops = msg("serve.look.stopsFirst", { node, other, deployment: b.deployment });
        drift.push(stops);
        out.moving.push(stops);
      }
      for (const d of driftOf(nb, st)) {
        drift.push(d.said);
        if (HEALTH_DRIFT.has(d.kind)) health.push(d.said);
      }
      if (st.life !== undefined) lives[nb.node] = st.life;
      const other = driftFindings(nb, st).find((f) => f.kind === "other-bundle");
      if (other !== undefined) (out.unapplied[b.deployment] ??= []).push(other.said);
      if (st.live?.verdict === "passive") out.passive.push(liveWords(nb.node, st.live));
      for (const f of lifeFindings(nb, st)) {
        drift.push(f);
        health.push(f);
      }
      if (me !== undefined) drift.push(...ownerDrift(nb.node, b.deployment, s.holders, me));
      if (st.live?.verdict === "refused") {
        const code = st.live.completionCode ?? st.live.modelsCode;
        pre.warnings.push(onNode(msg("serve.look.refused", { code })));
      }
      for (const f of st.failed) (f.fatal ? pre.fatal : pre.warnings).push(onNode(describeCheck(f)));
      const keys = envKeyDiff(nb, st);
      if (keys !== undefined) pre.notes.push(onNode(keys));
    }
    if (asDeclared && drift.length === 0 && unknown.length === 0) out.steady.push(b.deployment);
    out.drift[b.deployment] = drift;
    out.health[b.deployment] = health;
    if (unknown.length > 0) out.unknown[b.deployment] = unknown;
    out.preflight[b.deployment] = pre;
    life[b.deployment] = lives;
  }
  const lingering = new Set<string>();
  for (const [name, s] of byNode) {
    if (!s.ok) {
      if (!serving.has(name)) out.unreachable.push(s.error);
      continue;
    }
    if (s.model !== undefined) out.models[name] = s.model;
    out.holders[name] = s.holders;
    if (Object.keys(s.images).length > 0) out.images[name] = s.images;
    for (const d of s.held) if (!declared.has(d)) lingering.add(d);
    if (serving.has(name)) continue;
    for (const d of s.held) {
      // Another stack's deployment is left alone, and not listed.
      const owner = s.holders.find((h) => h.deployment === d)?.owner;
      if (me !== undefined && owner !== undefined && !sameOwner(owner, me)) continue;
      out.leaving.push({ node: name, deployment: d, protected: nodes[name]?.protected === true });
    }
  }
  out.lingering = [...lingering].sort();
  return out;
}
