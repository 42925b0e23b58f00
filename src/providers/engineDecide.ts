/**
 * What an `up` must do with one deployment, decided from the stored outputs and the new inputs
 * alone (no host I/O: what the nodes look like now arrives as the `drift` input, found at plan
 * time by serve/observe). One rule for check, diff and update.
 *
 * The diff key is the bundle identity (render/deployment.ts): the sha256 over every node's argv,
 * env, image, mounts, written files and start/stop scripts, and the readiness. What it decides is
 * seed 001's .env identity, for every target (render/launch): a new bundle whose launch is the
 * same on every node (only proofs, readiness settings or sm121's own scripts changed) updates the
 * state and checks the running engine; a changed launch restarts it.
 */
import type { DeploymentBundle } from "../render/types";
import { stepName, type StoredOutcome } from "../serve/outcome";
import type { EngineProps as AllProps } from "./engineWire";
import { providerMoved } from "./providerText";
import { listMsg, msg, sameMsg, type MessageKey, type Msg } from "../text/messages";
import { allowedProtected, protectedRefusal } from "../text/protected";
import { isSecretKey, SECRET_CONFIG } from "../render/keys";
import { checkFields, launchChanged } from "../render/launch";

/**
 * What the decision reads; `drift` is what the plan-time look at the nodes found (messages), and
 * `health` the part of it that is the engine's health (dead or hung), whose restarts are bounded.
 */
export type EngineProps = Pick<AllProps, "bundle" | "allow" | "outcome" | "__provider"> &
  Partial<Pick<AllProps, "secrets" | "drift" | "upgrade" | "health" | "liveness">>;

/** The node list, rank order and target: a change of these stops the old group before the new starts. */
export function shapeOf(b: DeploymentBundle): string {
  return JSON.stringify({ nodes: b.nodes.map((n) => n.node), deploy: b.deploy });
}

/** Which secrets changed since the last up, by their config key; never their values. */
export function rotatedSecrets(olds: Partial<EngineProps>, news: EngineProps): string[] {
  const a = olds.secrets ?? {};
  const b = news.secrets ?? {};
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return keys
    .filter((k) => a[k] !== b[k])
    .map((k) => (isSecretKey(k) ? SECRET_CONFIG[k] : k))
    .sort();
}

/** Nodes whose ssh address, port or user changed: the next operation dials the new one. */
export function movedConnections(olds: Partial<EngineProps>, news: EngineProps): Msg[] {
  const before = new Map((olds.bundle?.nodes ?? []).map((n) => [n.node, n.conn]));
  return news.bundle.nodes.flatMap((n) => {
    const o = before.get(n.node);
    if (
      o === undefined ||
      (o.host === n.conn.host && o.port === n.conn.port && o.user === n.conn.user && o.kind === n.conn.kind)
    )
      return [];
    const at = (c: typeof n.conn) => (c.kind === "local" ? msg("state.local") : `${c.user}@${c.host}:${c.port}`);
    return [msg("state.touch.connection", { node: n.node, from: at(o), to: at(n.conn) })];
  });
}

/** Per-node settings that decide what an operation may do there (delete and read use the stored ones). */
export function changedSettings(olds: Partial<EngineProps>, news: EngineProps): Msg[] {
  const before = new Map((olds.bundle?.nodes ?? []).map((n) => [n.node, n]));
  return news.bundle.nodes.flatMap((n) => {
    const o = before.get(n.node);
    if (o === undefined) return [];
    const out: Msg[] = [];
    const node = n.node;
    if (o.protected !== n.protected)
      out.push(msg("state.touch.protected", { node, from: String(o.protected), to: String(n.protected) }));
    if (o.memGateGiB !== n.memGateGiB)
      out.push(msg("state.touch.memGate", { node, from: o.memGateGiB, to: n.memGateGiB }));
    return out;
  });
}

/** Why an update restarts nothing: these only bring the stored state up to date. */
export interface Touch {
  /**
   * `setting`: a per-node safety setting; nothing on the node is asked or changed for it.
   * `checks`: a new bundle with the same launch; readiness and verify run on the running engine.
   * `state`: stored outputs of an older state version (./stateVersion), rewritten at this one.
   */
  kind: "connection" | "provider" | "state" | "setting" | "checks";
  words: Msg;
}

/** A deployment whose restarts for its health reached `sm121:liveness`: no more until SM121_RESTART=1. */
export interface Held {
  count: number;
  windowS: number;
  maxRestarts: number;
  /** The last restarts' causes (the look's findings), newest last. */
  causes: Msg[];
  /** The health drift found now. */
  now: Msg[];
  /** Held already by an earlier up (this one only leaves it alone). */
  already: boolean;
}

/**
 * What the decision says is data (a key and its arguments, src/text/messages), worded where it is
 * printed, in the reader's language; nothing decides on it.
 */
export interface Decision {
  /** Reasons the engine restarts on its nodes (a new bundle, drift, a rotated secret, ...). */
  restart: Msg[];
  /** Reasons to update the state without restarting (a new address, the provider text, a setting). */
  touch: Touch[];
  /** Restart even where the node runs this bundle (the serve's own probe would see no reason). */
  force: boolean;
  /** The health drift this restart repairs: it counts against sm121:liveness. */
  health: Msg[];
  held?: Held;
}

type Restart = NonNullable<StoredOutcome["restarts"]>[number];

/** A status an up can leave a deployment in, other than serving, as the reason of the next restart says it. */
const LEFT = {
  failed: "state.status.failed",
  stopped: "state.status.stopped",
  drifted: "state.status.drifted",
} as const satisfies Record<Exclude<StoredOutcome["status"], "serving">, MessageKey>;

/** Restarts for health within the window, oldest first. */
export function recentRestarts(o: EngineProps["outcome"], now: number, windowS: number): Restart[] {
  return (o?.restarts ?? []).filter((r) => now - Date.parse(r.at) < windowS * 1000);
}

export function decide(olds: Partial<EngineProps>, news: EngineProps, now: number = Date.now()): Decision {
  const restart: Msg[] = [];
  const touch: Touch[] = [];
  const heldBefore = olds.outcome?.held === true && !news.allow.restart;
  if (news.allow.restart) restart.push(msg("state.reason.restartAsked"));
  if (olds.bundle === undefined) restart.push(msg("state.reason.new"));
  else if (olds.bundle.identity !== news.bundle.identity) {
    // Seed 001's .env identity: a bundle whose launch is the same is checked on the running engine.
    const moved = launchChanged(olds.bundle, news.bundle);
    if (moved.length > 0) restart.push(msg("state.reason.launch", { nodes: moved.join(", ") }));
    else {
      const fields = checkFields(olds.bundle, news.bundle).join(", ");
      touch.push({ kind: "checks", words: msg("state.touch.checks", { fields }) });
    }
  }
  const health = news.health ?? [];
  // The look's findings are messages (serve/observe), the restart's reasons as they are; the health
  // part is told apart by the message itself (its key and arguments), never by its words.
  restart.push(...(news.drift ?? []).filter((d) => !health.some((h) => sameMsg(h, d))));
  const rotated = rotatedSecrets(olds, news);
  if (rotated.length > 0) restart.push(msg("state.reason.secret", { keys: rotated.join(", ") }));
  let held: Held | undefined;
  let counted: Msg[] = [];
  if (health.length > 0) {
    const bound = news.liveness ?? { maxRestarts: Number.POSITIVE_INFINITY, windowS: 0 };
    const recent = recentRestarts(olds.outcome, now, bound.windowS);
    if (heldBefore || (!news.allow.restart && recent.length >= bound.maxRestarts)) {
      const causes = recent.slice(-3).flatMap((r) => r.causes);
      held = { count: recent.length, ...bound, causes, now: health, already: heldBefore };
    } else {
      counted = health;
      restart.push(...health);
    }
  }
  // An up the operator interrupted is finished, not redone: the serve's own probe restarts only a
  // node that does not run the bundle (a load already running it is waited for).
  const interrupted = olds.outcome?.interrupted;
  const failed = olds.outcome !== undefined && olds.outcome.status !== "serving" && interrupted === undefined;
  const left = olds.outcome?.status;
  if (failed && !heldBefore && left !== undefined && left !== "serving") {
    restart.push(msg("state.reason.lastUp", { status: msg(LEFT[left]) }));
  }
  if (interrupted !== undefined && olds.outcome?.status !== "serving")
    touch.push({ kind: "checks", words: msg("state.touch.interrupted", { step: stepName(interrupted) }) });
  touch.push(...movedConnections(olds, news).map((words) => ({ kind: "connection" as const, words })));
  for (const words of changedSettings(olds, news)) touch.push({ kind: "setting", words });
  if (providerMoved(olds, news)) touch.push({ kind: "provider", words: msg("state.touch.provider") });
  if (olds.upgrade !== undefined) touch.push({ kind: "state", words: olds.upgrade });
  const force = news.allow.restart || (failed && !heldBefore) || rotated.length > 0 || counted.length > 0;
  return { restart, touch, force, health: counted, ...(held !== undefined && { held }) };
}

/** The held deployment, with the count, the window and the last causes (the look's findings). */
export function heldWords(deployment: string, h: Held): Msg {
  const causes = h.causes.length > 0 ? msg("state.heldCauses", { causes: listMsg(h.causes, "semi") }) : "";
  const { count, windowS, maxRestarts } = h;
  return msg("state.held", { deployment, count, windowS, maxRestarts, causes, now: listMsg(h.now, "semi") });
}

/** Protected nodes this run would stop or restart something on without the run's allowance. */
export function refusedProtected(b: DeploymentBundle, allowed: readonly string[], what: "stop" | "restart"): string[] {
  const situation = msg(what === "stop" ? "serve.wouldStop" : "serve.wouldRestart", { deployment: b.deployment });
  return b.nodes
    .filter((n) => n.protected && !allowed.includes(n.node))
    .map((n) => protectedRefusal(n.node, situation));
}

/** SM121_ALLOW_PROTECTED of this process (destroy runs no program, so the provider reads it). */
export function allowedHere(): string[] {
  return allowedProtected(process.env);
}
