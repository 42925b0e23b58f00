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
import type { DeploymentOutcome } from "../serve/outcome";
import type { EngineProps as AllProps } from "./engineWire";
import { providerMoved } from "./providerText";
import { msg } from "../text/messages";
import { allowedProtected, protectedRefusal } from "../text/protected";
import { isSecretKey, SECRET_CONFIG } from "../render/keys";
import { checkFields, launchChanged } from "../render/launch";

/**
 * What the decision reads; `drift` is what the plan-time look at the nodes found, in words, and
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
export function movedConnections(olds: Partial<EngineProps>, news: EngineProps): string[] {
  const before = new Map((olds.bundle?.nodes ?? []).map((n) => [n.node, n.conn]));
  return news.bundle.nodes.flatMap((n) => {
    const o = before.get(n.node);
    if (
      o === undefined ||
      (o.host === n.conn.host && o.port === n.conn.port && o.user === n.conn.user && o.kind === n.conn.kind)
    )
      return [];
    const at = (c: typeof n.conn) => (c.kind === "local" ? "local" : `${c.user}@${c.host}:${c.port}`);
    return [`${n.node}: connection ${at(o)} -> ${at(n.conn)}`];
  });
}

/** Per-node settings that decide what an operation may do there (delete and read use the stored ones). */
export function changedSettings(olds: Partial<EngineProps>, news: EngineProps): string[] {
  const before = new Map((olds.bundle?.nodes ?? []).map((n) => [n.node, n]));
  return news.bundle.nodes.flatMap((n) => {
    const o = before.get(n.node);
    if (o === undefined) return [];
    const out: string[] = [];
    if (o.protected !== n.protected) out.push(`${n.node}: protected ${String(o.protected)} -> ${String(n.protected)}`);
    if (o.memGateGiB !== n.memGateGiB) out.push(`${n.node}: memory gate ${o.memGateGiB} -> ${n.memGateGiB} GiB`);
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
  words: string;
}

/** A deployment whose restarts for its health reached `sm121:liveness`: no more until SM121_RESTART=1. */
export interface Held {
  count: number;
  windowS: number;
  maxRestarts: number;
  /** The last restarts' causes, newest last. */
  causes: string[];
  /** The health drift found now. */
  now: string[];
  /** Held already by an earlier up (this one only leaves it alone). */
  already: boolean;
}

export interface Decision {
  /** Reasons the engine restarts on its nodes (a new bundle, drift, a rotated secret, ...). */
  restart: string[];
  /** Reasons to update the state without restarting (a new address, the provider text, a setting). */
  touch: Touch[];
  /** Restart even where the node runs this bundle (the serve's own probe would see no reason). */
  force: boolean;
  /** The health drift this restart repairs: it counts against sm121:liveness. */
  health: string[];
  held?: Held;
}

type Restart = NonNullable<DeploymentOutcome["restarts"]>[number];

/** Restarts for health within the window, oldest first. */
export function recentRestarts(o: EngineProps["outcome"], now: number, windowS: number): Restart[] {
  return (o?.restarts ?? []).filter((r) => now - Date.parse(r.at) < windowS * 1000);
}

export function decide(olds: Partial<EngineProps>, news: EngineProps, now: number = Date.now()): Decision {
  const restart: string[] = [];
  const touch: Touch[] = [];
  const heldBefore = olds.outcome?.held === true && !news.allow.restart;
  if (news.allow.restart) restart.push("SM121_RESTART=1");
  if (olds.bundle === undefined) restart.push("new deployment");
  else if (olds.bundle.identity !== news.bundle.identity) {
    // Seed 001's .env identity: a bundle whose launch is the same is checked on the running engine.
    const moved = launchChanged(olds.bundle, news.bundle);
    if (moved.length > 0) restart.push(`the rendered bundle changed (the launch on ${moved.join(", ")})`);
    else {
      const fields = checkFields(olds.bundle, news.bundle).join(", ");
      touch.push({ kind: "checks", words: `checks, does not restart: ${fields}` });
    }
  }
  const health = news.health ?? [];
  restart.push(...(news.drift ?? []).filter((d) => !health.includes(d)));
  const rotated = rotatedSecrets(olds, news);
  if (rotated.length > 0) restart.push(`secret rotated: ${rotated.join(", ")}`);
  let held: Held | undefined;
  let counted: string[] = [];
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
  const failed = olds.outcome !== undefined && olds.outcome.status !== "serving";
  if (failed && !heldBefore) restart.push(`the last up left it ${olds.outcome?.status ?? ""}`);
  touch.push(...movedConnections(olds, news).map((words) => ({ kind: "connection" as const, words })));
  for (const w of changedSettings(olds, news)) {
    touch.push({ kind: "setting", words: `${w} (recorded; nothing restarts for it)` });
  }
  const none = "no engine restarts for it";
  if (providerMoved(olds, news)) {
    touch.push({ kind: "provider", words: `sm121's provider code in the state is rewritten (portable form); ${none}` });
  }
  if (olds.upgrade !== undefined) touch.push({ kind: "state", words: olds.upgrade });
  const force = news.allow.restart || (failed && !heldBefore) || rotated.length > 0 || counted.length > 0;
  return { restart, touch, force, health: counted, ...(held !== undefined && { held }) };
}

/** The held deployment in words, with the count, the window and the last causes. */
export function heldWords(deployment: string, h: Held): string {
  const causes = h.causes.length > 0 ? `; the last causes: ${h.causes.join("; ")}` : "";
  return (
    `deployment ${deployment} restarted ${h.count} times in the last ${h.windowS} s for its health ` +
    `(sm121:liveness maxRestarts ${h.maxRestarts})${causes}; now ${h.now.join("; ")}. ` +
    `sm121 marks it failed and leaves it alone: find the cause (\`sm121 logs ${deployment}\`), ` +
    "then run `SM121_RESTART=1 pulumi up` to start it again"
  );
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
