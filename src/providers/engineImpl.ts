/**
 * The work of EngineDeployment, in the provider process. Inputs arrive as plain JSON. Check and
 * diff run at every plan and are pure: the modules that reach the nodes (ssh2 and the serve
 * sequence, ~80 ms to load) are loaded by the operations that need them, not by the first check.
 */
import type * as pulumi from "@pulumi/pulumi";
import { PreflightFailure, ServeFailure, timingLine, toStored, type StoredOutcome } from "../serve/outcome";
import type { ServeOptions } from "../serve/serve";
import { cancelled } from "../remote/cancel";
import { withOverrides } from "../render/overrides";
import { listMsg, msg, say, t, type Msg } from "../text/messages";
import { authOf, holdsUnknown, providerLog, settled, type ResourceProvider } from "./common";
import { allowedHere, decide, heldWords, recentRestarts, refusedProtected, shapeOf } from "./engineDecide";
import type { Decision } from "./engineDecide";
import type { Held } from "../gateway/steps.serve";
import { fromStored, fromWire, oldsFromWire as oldProps } from "./engineWire";
import type { EngineProps as Props } from "./engineWire";
import type { EngineWire } from "./wire";
import { upgrade } from "./stateVersion";
import { gateAfterServe, gateFailed } from "./engineGate";
import { readyWords } from "../serve/phases";

/** Everything the engine passes in is parsed (./engineWire): stored outputs of any state version, or new inputs. */
export function check(oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.CheckResult> {
  return settled(() => checkNow(oldWire, wire));
}

/**
 * Refusals belong here, at plan time, before anything is touched: whatever the new inputs would
 * stop or restart on a protected node without this run's allowance, render-only and experimental
 * profiles, and (sm121:preflight) what the plan-time look found fatal.
 */
function checkNow(oldWire: unknown, wire: unknown): pulumi.dynamic.CheckResult {
  // During a preview an input may still be unknown: nothing to check yet.
  if (holdsUnknown(wire)) return { inputs: wire };
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const olds = oldProps(oldWire);
  const news = fromStored(wire);
  const b = news.bundle;
  // A deployment the look could not see: nothing happens to it in this run, so nothing to refuse.
  if ((news.unknown ?? []).length > 0) return { inputs: wire };
  const profile = { profile: b.profile ?? "", deployment: b.deployment };
  if (!b.runnable) failures.push({ property: "deployment", reason: t("serve.renderOnly", profile) });
  if (b.profileStatus === "experimental" && !news.allow.experimental)
    failures.push({ property: "deployment", reason: t("serve.experimental", profile) });
  const allowed = news.allow.protected;
  const replaced = olds.bundle !== undefined && shapeOf(olds.bundle) !== shapeOf(b);
  const refused = replaced
    ? [...refusedProtected(olds.bundle ?? b, allowed, "stop"), ...refusedProtected(b, allowed, "restart")]
    : decide(olds, news).restart.length > 0
      ? refusedProtected(b, allowed, "restart")
      : [];
  for (const reason of refused) failures.push({ property: "deployment", reason });
  if (news.preflight === true && failures.length === 0) {
    const log = providerLog(b.deployment);
    for (const n of news.findings?.notes ?? []) log(t("serve.preflight", { finding: say(n) }));
    for (const w of news.findings?.warnings ?? []) log(t("serve.warning", { warning: say(w) }));
    for (const f of news.findings?.fatal ?? [])
      failures.push({ property: "deployment", reason: t("serve.preflight", { finding: say(f) }) });
  }
  return { inputs: wire, failures };
}

/**
 * A restart that only the stored outputs ask for (the last up failed), which check cannot see (it
 * has the old inputs), on a protected node this run may not change: the deployment is left as it
 * is, and the plan says so with the allowance. Everything else check has refused already.
 */
function leftProtected(d: Decision, news: Props): string[] {
  return d.restart.length > 0 ? refusedProtected(news.bundle, news.allow.protected, "restart") : [];
}

/** Says why, under the resource: the plan shows what changes, this line what it does on the nodes. */
/** Both sides may be stored outputs of an older version: a refresh diffs what read found against the stored inputs. */
export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(oldWire, wire));
}

function diffNow(oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const olds = oldProps(oldWire);
  const news = fromStored(wire);
  const log = providerLog(news.deployment);
  const unknown = news.unknown ?? [];
  if (unknown.length > 0) {
    log(t("serve.unknown", { why: say(listMsg(unknown, "semi")), deployment: news.deployment }));
    return { changes: false };
  }
  // Check refused a change of shape on a protected node without the allowance.
  if (olds.bundle !== undefined && shapeOf(olds.bundle) !== shapeOf(news.bundle)) {
    log(
      t("serve.replaced", {
        from: olds.bundle.nodes.map((n) => n.node).join(", "),
        to: news.bundle.nodes.map((n) => n.node).join(", "),
      }),
    );
    return { changes: true, replaces: ["plan"], deleteBeforeReplace: true };
  }
  const d = decide(olds, news);
  const nodes = news.bundle.nodes.map((n) => n.node).join(", ");
  // The decision's messages, said here in the reader's language (the look's drift among them, as found).
  const words = (ms: readonly Msg[]) => ms.map((m) => say(m)).join("; ");
  const left = leftProtected(d, news);
  if (left.length > 0) log(t("serve.protectedLeft", { reasons: words(d.restart), refusal: left.join("; ") }));
  else if (d.restart.length > 0) log(t("serve.restarts", { nodes, reasons: words(d.restart) }) + rollPlace(news));
  else if (d.held !== undefined) {
    log(t(d.held.already ? "serve.heldAlready" : "serve.heldNow", { words: say(heldWords(news.deployment, d.held)) }));
  } else if (d.touch.length > 0) {
    const checks = d.touch.filter((x) => x.kind === "checks").map((x) => say(x.words));
    const rest = words(d.touch.filter((x) => x.kind !== "checks").map((x) => x.words));
    log([...checks, ...(rest !== "" ? [t("serve.restartsNothing", { words: rest })] : [])].join("; "));
  }
  const newlyHeld = d.held !== undefined && !d.held.already;
  const restarts = left.length === 0 && d.restart.length > 0;
  return { changes: restarts || d.touch.length > 0 || newlyHeld };
}

/** Where a restart stands in its replica set's roll, for the plan. */
function rollPlace(news: Props): string {
  const r = news.replica;
  if (r === undefined) return "";
  const place = { index: r.index, of: r.of, model: r.model };
  if (r.roll === "all") return t("serve.rollAll", place);
  if (r.after !== undefined) return t("serve.rollAfter", { ...place, after: r.after });
  return r.surge === undefined
    ? t("serve.rollFirst", place)
    : t("serve.rollFirstAfterSurge", { ...place, surge: r.surge });
}

function goBack(olds: Partial<Props> | undefined, news: Props): string {
  const deployment = news.bundle.deployment;
  const profile = olds?.bundle?.profile;
  if (profile !== undefined && profile !== news.bundle.profile)
    return t("state.goBack.profile", { profile, deployment });
  if (olds?.bundle !== undefined) return t("state.goBack.revert");
  return t("state.goBack.remove", { deployment });
}

/**
 * `SM121_VERBOSE=1 pulumi up` (seed 001's `up --verbose`): the raw @sm121 records of the node
 * scripts in Pulumi's log too. Read here, from the environment the CLI gives the provider, so that
 * it is no input and changes no diff.
 */
const verbose = (): boolean => process.env["SM121_VERBOSE"] === "1";

/** What every serve of this run takes from the inputs: the secrets, the owner, the allowances. */
type RunServe = Pick<ServeOptions, "secrets" | "verbose" | "owner" | "allowTakeover" | "keepBackups">;

function serveSettings(p: Props): RunServe {
  return {
    secrets: p.secrets ?? {},
    verbose: verbose(),
    allowTakeover: p.allow.takeover ?? [],
    ...(p.owner !== undefined && { owner: p.owner }),
    ...(p.keepBackups !== undefined && { keepBackups: p.keepBackups }),
  };
}

type Restarts = NonNullable<StoredOutcome["restarts"]>;

/** The health restarts the outcome carries on: the recent ones, and this one when it counts. */
function restartsAfter(olds: Partial<Props> | undefined, news: Props, d: Decision, now: number): Restarts {
  if (news.allow.restart) return [];
  const recent = recentRestarts(olds?.outcome, now, news.liveness?.windowS ?? 0);
  return d.health.length > 0 ? [...recent, { at: new Date(now).toISOString(), causes: d.health }] : recent;
}

/** An outcome with the health restarts counted so far. */
const counted = (o: StoredOutcome, restarts: Restarts): StoredOutcome => ({
  ...o,
  ...(restarts.length > 0 && { restarts }),
});

/** An error carrying id and properties: Pulumi records a failed resource with these outputs. */
function failedWith(message: string, id: string, wire: EngineWire, outcome: StoredOutcome, cause?: unknown): Error {
  return Object.assign(new Error(message, { cause }), { id, properties: { ...wire, outcome }, reasons: [message] });
}

async function run(id: string | undefined, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const olds = oldProps(oldWire);
  const wire = upgrade("EngineDeployment", given).state;
  const news = fromWire(wire);
  const b = news.bundle;
  const rid = id ?? b.deployment;
  const log = providerLog(b.deployment);
  const unknown = news.unknown ?? [];
  // A new deployment on a node the look could not reach: nothing is tried there.
  if (unknown.length > 0) {
    throw new Error(t("state.unknownNew", { deployment: b.deployment, why: say(listMsg(unknown, "semi")) }));
  }
  // The gate's baseline rides on every output of this update (./engineGate), failed ones too.
  let gateState = olds?.gate;
  const kept = (w: EngineWire): EngineWire => ({ ...w, ...(gateState !== undefined && { gate: gateState }) });
  const now = Date.now();
  const d = decide(olds ?? {}, news, now);
  const restarts = restartsAfter(olds, news, d, now);
  // Restarted for its health as often as sm121:liveness allows: failed, and no restart now. Pulumi
  // updates a resource whose last update failed at every up: a held one stays as it is, quietly.
  if (d.held?.already === true && d.restart.length === 0 && olds?.outcome !== undefined) {
    return { id: rid, outs: { ...kept(wire), outcome: olds.outcome } };
  }
  if (d.held !== undefined && d.restart.length === 0) {
    const failure = heldWords(b.deployment, d.held);
    const before = olds?.outcome ?? { status: "failed", nodes: [], warnings: [] };
    const outcome: StoredOutcome = { ...before, status: "failed", held: true, failure, restarts };
    throw failedWith(say(failure), rid, kept(wire), outcome);
  }
  // Only per-node settings or the state's version changed, or a restart is left to the allowance of
  // a protected node (leftProtected): the state takes the rest; nothing on a node is asked or changed.
  const recordOnly = d.touch.every((t) => t.kind === "setting" || t.kind === "state");
  const settingsOnly = d.restart.length === 0 && d.touch.length > 0 && recordOnly;
  const left = leftProtected(d, news).length > 0;
  if (olds?.outcome !== undefined && (settingsOnly || left))
    return { id: rid, outs: { ...kept(wire), outcome: olds.outcome } };
  const { serve } = await import("../serve/serve");
  // A replica of a roll leaves the gateway's rotation, and its requests in flight finish, before it stops.
  const held = d.restart.length > 0 ? await leaveForRoll(olds, news, log) : undefined;
  try {
    // A failed or drifted deployment, a hung engine, or a rotated secret restarts even when its
    // bundle is the same; the rest (a dead engine, an edited file, a newer mount) the serve's own
    // probe finds.
    const settings = {
      ...serveSettings(news),
      forceRestart: d.force,
      goBack: goBack(olds, news),
      log,
      ...(olds?.bundle !== undefined && { previous: olds.bundle }),
    };
    // SM121_TIMEOUT_S and SM121_MIN_MEM_GIB: this run's serve only; the state keeps the declared bundle.
    const outcome = await serve(withOverrides(b, news.allow.overrides ?? {}), authOf(news.connection), settings);
    // The gate: the first replica restarted is measured before the roll goes on; slower rolls back.
    const turn = await gateAfterServe({ olds: olds ?? {}, news, outcome, auth: authOf(news.connection), log });
    gateState = turn.state ?? gateState;
    if (turn.failure !== undefined) throw gateFailed(turn.failure, outcome, b.deployment);
    if (held !== undefined) await release(held, log);
    for (const w of outcome.warnings) log(t("serve.warning", { warning: say(w) }));
    for (const n of outcome.nodes)
      if (n.timings !== undefined) log(say(msg("serve.timings", { node: n.node, timings: timingLine(n.timings) })));
    for (const c of b.clientNotes) log(t("serve.clientNote", { note: c }));
    for (const n of outcome.nodes) if (n.ready !== undefined) log(say(readyWords(n.ready, n.node)));
    // Repaired: what the plan-time look found is no longer true.
    return { id: rid, outs: { ...kept(wire), drift: [], outcome: counted(toStored(outcome), restarts) } };
  } catch (e) {
    if (e instanceof ServeFailure) {
      const back = await rollBack(olds, news, e, log);
      if (back !== undefined) {
        // The previous recipe answers again: the replica's entries as they were.
        if (held !== undefined && back.outcome.nodes.every((n) => n.endpoint !== undefined)) await release(held, log);
        throw failedWith(rollStopped(news, back.message), rid, kept(wire), counted(back.outcome, restarts), e);
      }
      if (news.gateway !== undefined) {
        const { disableFailed, placeOf } = await import("../gateway/steps.serve");
        const nodes = b.nodes.map((n) => n.node);
        await disableFailed(placeOf(news.gateway, authOf(news.connection)), b.deployment, nodes, log);
      }
      const stored = counted(toStored(e.outcome, e.step), restarts);
      throw failedWith(rollStopped(news, e.message), rid, kept(wire), stored, e);
    }
    if (e instanceof PreflightFailure) throw new Error(e.message, { cause: e });
    throw e;
  }
}

/**
 * A replica that restarts in a roll (one at a time) and serves now: it leaves the gateway's rotation
 * as the plan's step says (gateway/steps.serve), its requests in flight finishing first. undefined: no
 * gateway entries were held.
 */
async function leaveForRoll(
  olds: Partial<Props> | undefined,
  news: Props,
  log: (m: string) => void,
): Promise<Held | undefined> {
  const r = news.replica;
  if (r === undefined || r.roll !== "one" || olds?.outcome?.status !== "serving") return undefined;
  const { leave, placeOf } = await import("../gateway/steps.serve");
  const auth = authOf(news.connection);
  const nodes = news.bundle.nodes.map((n) => n.node);
  const g = news.gateway === undefined ? undefined : { place: placeOf(news.gateway, auth), nodes };
  return leave(r, g, olds.bundle ?? news.bundle, auth, log);
}

async function release(h: Held, log: (m: string) => void): Promise<void> {
  const { rejoin } = await import("../gateway/steps.serve");
  await rejoin(h, log);
}

/** A failed replica of a roll: the roll stops there, and the message says who still serves what. */
function rollStopped(news: Props, message: string): string {
  const r = news.replica;
  if (r === undefined || r.roll !== "one") return message;
  const rest = r.of - r.index;
  const surge = r.surge === undefined ? "" : t("state.rollSurge", { surge: r.surge });
  const others = `${rest === 0 ? "" : t("state.rollOthers", { count: rest })}${surge}`;
  const place = { deployment: news.bundle.deployment, index: r.index, of: r.of, model: r.model };
  return `${t("state.rollStopped", { ...place, others })}\n${message}`;
}

/**
 * rollback = "auto": a failed readiness restores the previous bundle and starts it again. The up
 * still fails; its message says that it rolled back and what serves now.
 */
async function rollBack(
  olds: Partial<Props> | undefined,
  news: Props,
  e: ServeFailure,
  log: (m: string) => void,
): Promise<{ message: string; outcome: StoredOutcome } | undefined> {
  const prev = olds?.bundle;
  // A failed gate always goes back: slower is a failure the previous bundle did not have.
  const gate = e.step === "gate";
  if ((!gate && news.bundle.rollback !== "auto") || prev === undefined || prev.identity === news.bundle.identity)
    return undefined;
  if (e.step !== "readiness" && !gate) return undefined;
  // After Ctrl-C the operator wants the run over, not another start.
  if (cancelled.aborted) return undefined;
  const short = prev.identity.slice(0, 12);
  const named = prev.profile === undefined ? short : t("state.profileNamed", { profile: prev.profile });
  log(t(gate ? "state.gateRollingBack" : "state.rollingBack", { what: named }));
  try {
    const { serve } = await import("../serve/serve");
    const settings = { ...serveSettings(news), forceRestart: true, goBack: "", log };
    const restored = await serve(prev, authOf(news.connection), settings);
    const where = restored.nodes.flatMap((n) => (n.endpoint === undefined ? [] : [n.endpoint])).join(", ");
    const what =
      prev.profile === undefined
        ? msg("state.prevBundle", { identity: short })
        : msg("state.prevProfile", { profile: prev.profile });
    const served = restored.servedModel;
    const back = msg(gate ? "state.gateRolledBack" : "state.rolledBack", {
      deployment: prev.deployment,
      what,
      where: where === "" ? "" : msg("state.rolledBackAt", { where }),
      model: served === undefined ? "" : msg("state.rolledBackModel", { model: served }),
    });
    return {
      message: `${e.message}\n${say(back)}`,
      outcome: {
        ...toStored(e.outcome, e.step),
        status: "failed",
        rolledBack: true,
        nodes: restored.nodes,
        ...(restored.servedModel !== undefined && { servedModel: restored.servedModel }),
      },
    };
  } catch (err) {
    const why = err instanceof Error ? err.message : String(err);
    return { message: `${e.message}\n${t("state.rollbackFailed", { why })}`, outcome: toStored(e.outcome, e.step) };
  }
}

function create(inputs: unknown): Promise<pulumi.dynamic.CreateResult> {
  return run(undefined, undefined, inputs);
}

async function update(id: string, olds: unknown, news: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const outs: unknown = (await run(id, olds, news)).outs;
  return { outs };
}

/** destroy, a removal from the site and a targeted destroy all come here, with no program run. */
export async function remove(_id: string, wire: unknown): Promise<void> {
  const props = fromStored(wire);
  const refused = refusedProtected(props.bundle, allowedHere(), "stop");
  if (refused.length > 0)
    throw new Error(`${refused.join("\n")}\n${t("serve.nothingStopped", { deployment: props.bundle.deployment })}`);
  const { stopDeployment } = await import("../serve/stop");
  await stopDeployment(props.bundle, authOf(props.connection), providerLog(props.bundle.deployment), props.secrets);
}

export async function read(id: string, stored?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const wire = upgrade("EngineDeployment", stored).state;
  const props = fromWire(wire);
  const { inspectDeployment } = await import("../serve/stop");
  const found = await inspectDeployment(props.bundle, authOf(props.connection));
  // What only a serve can verify (the served name, max_model_len) stays from the last serve, and
  // so does what only an up decides: the health restarts counted, and whether it is held.
  const prev = props.outcome;
  const outcome: StoredOutcome = {
    ...toStored(found),
    ...(prev?.servedModel !== undefined && { servedModel: prev.servedModel }),
    ...(prev?.maxModelLen !== undefined && { maxModelLen: prev.maxModelLen }),
    ...(prev?.restarts !== undefined && { restarts: prev.restarts }),
    ...(prev?.held === true && { held: true, status: "failed" as const }),
    ...(prev?.held === true && prev.failure !== undefined && { failure: prev.failure }),
  };
  return { id, props: { ...wire, outcome } };
}

/** EngineDeployment's provider (./providerText): check, diff, create, update, delete and read. */
export const provider = { check, diff, create, update, delete: remove, read } satisfies ResourceProvider;
