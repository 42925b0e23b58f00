/**
 * `pulumi up` of one deployment, seed 001's sequence across all its nodes:
 * preflight -> mkdirs -> stop (verify gone) on every node -> memory gate -> write with backup ->
 * start -> /v1/models -> verify. Nodes are worked on in parallel over one connection each, every
 * step on the channel that holds the node's lock (remote/held).
 */
import { CommandError, hostFor, withHosts, type Host, type SshAuth } from "../remote";
import type { DeploymentBundle, LinkTestPlan, NodeBundle } from "../render/types";
import { keyNote } from "../render/plan";
import { linkTestText, runLinkTest } from "../fabric/linkrun.serve";
import { describeCheck, probeNode, type NodeState } from "./probe";
import { alreadyServing, envKeyDiff, runsThisLaunch } from "./drift";
import {
  addTimings,
  DeploymentOutcome,
  NodeOutcome,
  PreflightFailure,
  ServeFailure,
  stepFailed,
  stepName,
  utcStamp,
  type ServeStep,
} from "./outcome";
import { modelsListed, verifyScript } from "./readiness";
import { firstRecord, recordsOf, type NodeRecord } from "../protocol";
import { foreignHolders, movedFrom, takeoverRefusal, type Owner } from "./owner";
import { deploymentOf, registerScript } from "./registry";
import { nodePath } from "../text/shell";
import { stepScripts, type Step } from "./sequence";
import { failureAdvice, maskSecrets } from "./failure";
import { mkdirScript, stateScript, timed } from "./steps";
import { copiedScript, readyPhases, writeReadyScript } from "./phases";
import { runningImageOf, runningImageScript } from "./digest";
import { lifeIn, readyScript } from "./nodelife";
import { msg, SaidError, say as sayIn, t, type Locale, type MessageKey, type Msg } from "../text/messages";

export interface ServeOptions {
  secrets: Record<string, string>;
  /** SM121_RESTART: restart even when the node already runs this bundle. */
  forceRestart: boolean;
  /** How to go back, for the failure message (e.g. the previous profile). */
  goBack: string;
  /**
   * What a failure leaves in the state, a message of {deployment} and {failure} (a surge has none:
   * providers/surge); by default the deployment is marked failed.
   */
  failedState?: MessageKey;
  log: (message: string) => void;
  /** Also log the raw @sm121 records of the node scripts (SM121_VERBOSE=1). */
  verbose?: boolean;
  /** The stack this run serves for, recorded on each node; a deployment of another is not stopped. */
  owner?: Owner;
  /** SM121_ALLOW_TAKEOVER: nodes where this run may stop another stack's deployment. */
  allowTakeover?: readonly string[];
  /** sm121:keepBackups. */
  keepBackups?: number;
  /** The bundle the state holds: a node record an older sm121 wrote is compared through it (render/launch). */
  previous?: DeploymentBundle;
}

export async function serve(b: DeploymentBundle, auth: SshAuth, o: ServeOptions): Promise<DeploymentOutcome> {
  return withHosts(b.nodes, auth, (hosts) => serveOn(b, hosts, o), { lock: true, log: o.log });
}

const host = (hosts: Map<string, Host>, nb: NodeBundle): Host => hostFor(hosts, nb.node);

/** A warning sm121 has in English words only (the bundle's, the readiness's): kept as found. */
const asFound = (text: string): Msg => msg("state.asFound", { text });
const onNode = (node: string, text: Msg): Msg => msg("state.onNode", { node, text });

/** Preflight, read-only: the node states, and the warnings; fatal findings throw, changing nothing. */
async function preflight(
  b: DeploymentBundle,
  hosts: Map<string, Host>,
  o: ServeOptions,
): Promise<{ states: NodeState[]; warnings: Msg[] }> {
  const warnings: Msg[] = b.warnings.map(asFound);
  const states = await Promise.all(b.nodes.map((nb) => probeNode(host(hosts, nb), nb)));
  const fatal: string[] = [];
  b.nodes.forEach((nb, i) => {
    const st = states[i] as NodeState;
    for (const f of st.failed) {
      if (f.fatal) fatal.push(`${nb.node}: ${sayIn(describeCheck(f))}`);
      else warnings.push(onNode(nb.node, describeCheck(f)));
    }
    // The plan refused this already; a stack that took the node since then is refused here.
    const me = o.owner;
    const mayTake = me === undefined || (o.allowTakeover ?? []).includes(nb.node);
    if (!mayTake) for (const h of foreignHolders(st.holders, me)) fatal.push(takeoverRefusal(nb.node, h, me));
  });
  if (fatal.length > 0)
    throw new PreflightFailure(`${t("serve.preflightFailed", { deployment: b.deployment })}\n  ${fatal.join("\n  ")}`);
  return { states, warnings };
}

/** The link test before a start; a failure leaves every node as it was. */
async function fabricCheck(
  b: DeploymentBundle,
  plan: LinkTestPlan,
  hosts: Map<string, Host>,
  log: (m: string) => void,
): Promise<void> {
  const between = b.nodes.map((n) => n.node).join(", ");
  log(t("serve.linkTest", { nodes: between }));
  const report = await runLinkTest(b, plan, (nb) => host(hosts, nb), log);
  const text = linkTestText(report);
  const failed = t("serve.linkTestFailed", { deployment: b.deployment });
  if (!report.ok) throw new PreflightFailure(`${text.join("\n")}\n${failed}`);
  for (const l of text) log(l);
}

async function serveOn(b: DeploymentBundle, hosts: Map<string, Host>, o: ServeOptions): Promise<DeploymentOutcome> {
  // 1. Preflight, read-only: a failure here changes nothing.
  const { states, warnings } = await preflight(b, hosts, o);
  // Seed 001: the preflight prints the node's current .env keys against the render, before any write.
  b.nodes.forEach((nb, i) => {
    const keys = envKeyDiff(nb, states[i] as NodeState);
    if (keys !== undefined) o.log(`${nb.node}: ${sayIn(keys)}`);
  });
  // What the node prints (progress, the engine's last log line) goes to Pulumi's log, secrets
  // masked; its records too when the run is verbose.
  const say = (nb: NodeBundle) => (l: string) => {
    if (o.verbose === true || !l.startsWith("@sm121")) o.log(`${nb.node}: ${maskSecrets(l, o.secrets)}`);
  };
  // The plan's rule (render/plan keyNote): an endpoint that does not take sm121:apiKey is said.
  const note = o.secrets["API_KEY"] !== undefined ? keyNote(b) : undefined;
  if (note !== undefined) warnings.push(note);

  const outcomes: NodeOutcome[] = b.nodes.map((nb, i) => ({
    node: nb.node,
    rank: nb.rank,
    status: "standby",
    identity: nb.identity,
    backups: [],
    restarted: false,
    ...(states[i]?.startedAt !== undefined && { startedAt: states[i]?.startedAt }),
  }));
  // Deployments the site also puts on a node share it; any other one there is stopped first.
  const neighbors = (i: number) => b.nodes[i]?.neighbors ?? [];
  const strangers = (i: number) => (states[i] as NodeState).others.filter((o) => !neighbors(i).includes(o));
  const same = b.nodes.every((nb, i) => alreadyServing(nb, states[i] as NodeState) && strangers(i).length === 0);
  // Seed 001's .env identity: a new bundle whose launch every node runs already is checked, not restarted.
  const previous = (nb: NodeBundle) => o.previous?.nodes.find((p) => p.node === nb.node);
  const launched = (nb: NodeBundle, i: number) =>
    runsThisLaunch(nb, states[i] as NodeState, previous(nb)) && strangers(i).length === 0;
  const checksOnly = !same && !o.forceRestart && b.nodes.every(launched);
  let step: ServeStep = "stop";
  // Every step's script, rendered once for this run (the write step carries its UTC stamp).
  const stamp = utcStamp();
  const renderedAt = new Date().toISOString().replace(/\.\d+Z$/, "Z");
  const w = {
    stamp,
    renderedAt,
    secrets: o.secrets,
    ...(o.owner !== undefined && { owner: o.owner }),
    ...(o.keepBackups !== undefined && { keepBackups: o.keepBackups }),
  };
  const scripts = b.nodes.map((nb) => stepScripts(b, nb, w));
  /** Each node's records of its start step (its timings, the copies before it): the split of its time to ready. */
  const started: NodeRecord[][] = b.nodes.map(() => []);
  // sm121:fabricCheck: the link test between the nodes, before anything of the old engine stops;
  // its failure is a preflight's: the deployment stays as it was.
  if ((!same || o.forceRestart) && !checksOnly && b.linkTest !== undefined)
    await fabricCheck(b, b.linkTest, hosts, o.log);
  /** The files the write step reports, as the node's record of this bundle. */
  const recordWrites = (i: number, nb: NodeBundle, records: readonly NodeRecord[]) => {
    const out = outcomes[i] as NodeOutcome;
    addTimings(out, records);
    const written: Record<string, string> = {};
    for (const r of recordsOf(records, "written")) {
      written[r.file] = r.sha256;
      if (r.backup !== null) out.backups.push(r.backup);
    }
    (states[i] as NodeState).recorded = { identity: nb.identity, files: written };
  };
  try {
    if (checksOnly) {
      // Only what is no launch field changed: sm121's own files are brought up to date, the engine runs on.
      o.log(t("serve.checksOnly"));
      step = "write";
      await Promise.all(
        b.nodes.map(async (nb, i) => {
          const write = timed("write", (scripts[i] as Record<Step, string>).write);
          const res = await host(hosts, nb).run(write, { step: "write", onLine: say(nb) });
          recordWrites(i, nb, res.records);
        }),
      );
    } else if (!same || o.forceRestart) {
      // 3. Stop on every node, and verify gone, before any node starts again. Nodes where
      // nothing of this deployment runs or was ever written (a first serve) only get their mkdirs.
      const st = (i: number) => states[i] as NodeState;
      const fresh = (i: number) => !st(i).running && st(i).recorded === undefined && strangers(i).length === 0;
      const stopping = b.nodes.filter((_, i) => !fresh(i)).map((n) => n.node);
      warnings.push(...clientsCut(b, states));
      if (stopping.length > 0) o.log(t("serve.stopping", { nodes: stopping.join(", ") }));
      await Promise.all(
        b.nodes.map(async (nb, i) => {
          // Another deployment on the node (a node move) stops first, by its own stored stop.
          const script = fresh(i) ? mkdirScript(nb) : timed("stop", (scripts[i] as Record<Step, string>).stop);
          if (script === ":") return;
          const res = await host(hosts, nb).run(script, { step: "stop", onLine: say(nb) });
          addTimings(outcomes[i] as NodeOutcome, res.records);
        }),
      );
      // 4-6. Memory gate, write with backup, start: one script per node.
      step = "memory gate, write and start";
      await Promise.all(
        b.nodes.map(async (nb, i) => {
          const s = scripts[i] as Record<Step, string>;
          const script = [
            timed("memory-gate", s["memory-gate"]),
            timed("write", s.write),
            timed("start", s.start),
            copiedScript(nb),
          ].join("\n");
          const res = await host(hosts, nb).run(script, { step: "memory gate, write and start", onLine: say(nb) });
          recordWrites(i, nb, res.records);
          started[i] = [...res.records];
          const out = outcomes[i] as NodeOutcome;
          out.restarted = nb.runs;
          out.status = nb.runs ? "failed" : "standby";
        }),
      );
    } else {
      o.log(t("serve.readinessOnly"));
    }
    // 7-8. Readiness and verification where the API answers; the other ranks must still run.
    step = "readiness";
    const verified = await Promise.all(
      b.nodes.map((nb, i) => {
        const st = states[i] as NodeState;
        const here = {
          steps: scripts[i] as Record<Step, string>,
          st,
          out: outcomes[i] as NodeOutcome,
          started: started[i] ?? [],
        };
        return finish(b, nb, here, host(hosts, nb), warnings, say(nb), o.owner);
      }),
    );
    const api = verified.find((v) => v !== undefined);
    return {
      status: "serving",
      nodes: outcomes,
      warnings,
      ...(api?.served !== undefined && { servedModel: api.served }),
      ...(api?.maxLen !== undefined && { maxModelLen: api.maxLen }),
    };
  } catch (e) {
    // The operator reads the failure in their language; the state keeps it in English, so that two
    // operators' runs record the same bytes (the reader says its step in theirs: outcome.ts toStored).
    const said = (locale?: Locale) =>
      maskSecrets(
        e instanceof SaidError ? sayIn(e.said, locale) : e instanceof Error ? e.message : String(e),
        o.secrets,
      );
    for (const out of outcomes) if (out.status !== "serving") out.status = "failed";
    const backups = outcomes.flatMap((n) => n.backups.map((p) => `${n.node}:${p}`));
    const failure = sayIn(stepFailed(step, said()));
    const head = t(o.failedState ?? "serve.failedMarked", { deployment: b.deployment, failure });
    const back = backups.length > 0 ? t("serve.backedUp", { files: backups.join(", ") }) : t("serve.noneReplaced");
    // The operator's Ctrl-C: what really happened, and what the next up does about it.
    const interrupted = e instanceof CommandError && e.interrupted;
    const loading = outcomes.filter((n) => n.restarted).map((n) => n.node);
    const next =
      step === "readiness" && loading.length > 0
        ? t("serve.interruptedLoading", { nodes: loading.join(", ") })
        : t("serve.interruptedNext", { step: sayIn(stepName(step)) });
    const advice = failureAdvice(e, b);
    const goBack = `${o.goBack}${backups.length > 0 ? `; ${t("serve.inBackups")}` : ""}`;
    const told = interrupted
      ? [head, back, next]
      : [head, back, ...(advice === "" ? [] : [advice]), t("serve.toGoBack", { goBack })];
    const recorded = `${step} failed: ${said("en")}`;
    const first = recorded.split("\n")[0] ?? recorded;
    const outcome = {
      status: "failed" as const,
      nodes: outcomes,
      warnings,
      failure: first,
      ...(interrupted && { interrupted: step }),
    };
    throw new ServeFailure(told.join("\n"), outcome, step);
  }
}

/**
 * The clients a restart cuts: the open connections to each engine this serve stops (an engine that
 * runs on and is only checked keeps its clients, and says nothing of them).
 */
export function clientsCut(b: DeploymentBundle, states: readonly NodeState[]): Msg[] {
  return b.nodes.flatMap((nb, i) => {
    const st = states[i];
    if (st === undefined || !st.running || st.clients === undefined || st.clients === 0) return [];
    return [onNode(nb.node, msg("state.warn.clients", { count: st.clients, port: nb.api?.port ?? "?" }))];
  });
}

async function finish(
  b: DeploymentBundle,
  nb: NodeBundle,
  { steps, st, out, started }: { steps: Record<Step, string>; st: NodeState; out: NodeOutcome; started: NodeRecord[] },
  h: Host,
  warnings: Msg[],
  onLine: (l: string) => void,
  owner?: Owner,
): Promise<{ served?: string; maxLen?: number } | undefined> {
  // The record of what was written, and the node's registry entry (a stack served by an older
  // sm121 gets its stop.sh here, on the first up that checks it).
  // This stack's own record from the backend it moved from is replaced, not kept to hand back.
  const mine = st.holders.find((x) => x.deployment === deploymentOf(nb))?.owner;
  const moved = owner !== undefined && mine !== undefined && movedFrom(mine, owner);
  const forget = moved ? `rm -f ${nodePath(nb.stateDir)}/owner.json\n` : "";
  const register = `${forget}${registerScript(nb, b.hooks.afterStop, owner)}`;
  const record = st.recorded === undefined ? ":" : `${stateScript(nb, nb.identity, st.recorded.files)}\n${register}`;
  // The image a container runs, by digest (two docker calls; none for the other targets).
  const image = nb.containerName === undefined ? ":" : runningImageScript(nb.containerName);
  if (nb.api === undefined) {
    const res = await h.run(`${record}\n${timed("readiness", nb.status)}\n${image}\n${readyScript(nb)}`, {
      step: "status",
    });
    addTimings(out, res.records);
    const running = runningImageOf(res.records, nb.image);
    if (running !== undefined) out.image = running;
    const s = firstRecord(res.records, "status");
    if (nb.runs && s?.running !== true)
      throw new SaidError(msg("serve.rankNotRunning", { node: nb.node, rank: nb.rank }));
    bootOf(out, res.records);
    out.status = "standby";
    if (typeof s?.startedAt === "string") out.startedAt = s.startedAt;
    return undefined;
  }
  // A node that was not restarted keeps the start time its preflight read: no second status call.
  const verify = out.restarted ? steps.verify : verifyScript(nb, b.readiness);
  // Once it answers: the node's boot id and the time, for the look (serve/nodelife).
  const script = [record, timed("readiness", steps.readiness), timed("verify", verify), image, readyScript(nb)];
  const res = await h.run(script.join("\n"), {
    step: "readiness",
    timeoutMs: (b.readiness.timeoutS + 60) * 1000,
    onLine,
  });
  addTimings(out, res.records);
  const running = runningImageOf(res.records, nb.image);
  if (running !== undefined) out.image = running;
  const models = modelsListed(res.records);
  const ids = (models?.data ?? []).map((m) => m.id);
  const want = b.readiness.servedName;
  if (want !== undefined && !ids.includes(want))
    throw new SaidError(msg("serve.servesOther", { node: nb.node, ids: ids.join(", ") || "-", want }));
  const entry = (models?.data ?? []).find((m) => want === undefined || m.id === want);
  const maxLen = entry?.max_model_len;
  if (b.readiness.maxModelLen !== undefined && maxLen !== b.readiness.maxModelLen)
    throw new SaidError(
      msg("serve.maxLenOther", { node: nb.node, maxLen: String(maxLen), want: b.readiness.maxModelLen }),
    );
  const first = firstRecord(res.records, "firstToken");
  if (first !== undefined) {
    out.readyS = Math.round(first.readyMs / 100) / 10;
    out.ttftMs = first.ttftMs;
    onLine(t("serve.readyIn", { seconds: out.readyS, ms: out.ttftMs }));
  }
  // Where this start's time went: kept in the state and on the node (status, the next plan read it).
  const split = out.restarted ? readyPhases(b.engine, [...started, ...res.records], new Date()) : undefined;
  if (split !== undefined) {
    out.ready = split;
    await h.run(writeReadyScript(nb, split), { step: "readiness" });
  }
  const kv64 = firstRecord(res.records, "kvCacheLine")?.line64;
  const kv = kv64 === undefined ? "" : Buffer.from(kv64, "base64").toString("utf8").trim();
  if (kv !== "") out.kvCacheLine = kv;
  else if (b.readiness.kvCachePattern !== undefined) warnings.push(onNode(nb.node, msg("state.warn.noKvLine")));
  if (firstRecord(res.records, "launcherRunning") !== undefined) {
    warnings.push(onNode(nb.node, msg("state.warn.launcherWaiting", { url: nb.api.url })));
  }
  for (const r of recordsOf(res.records, "proof")) {
    if (!r.found)
      warnings.push(onNode(nb.node, msg("state.warn.proofMissing", { proof: b.readiness.proofs[r.index] ?? "" })));
  }
  const s = firstRecord(res.records, "status");
  if (typeof s?.startedAt === "string") out.startedAt = s.startedAt;
  bootOf(out, res.records);
  out.status = "serving";
  out.endpoint = nb.api.url;
  return { ...(entry?.id !== undefined && { served: entry.id }), ...(maxLen !== undefined && { maxLen }) };
}

/** The node's boot id when the engine was ready there (serve/nodelife), into the state. */
function bootOf(out: NodeOutcome, records: readonly NodeRecord[]): void {
  const boot = lifeIn(records)?.boot;
  if (boot !== undefined && boot !== "") out.bootId = boot;
}
