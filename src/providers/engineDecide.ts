/**
 * What an `up` must do with one deployment, decided from the stored outputs and the new inputs
 * alone (no host I/O: what the nodes look like now arrives as the `drift` input, found at plan
 * time by serve/observe). One rule for check, diff and update.
 *
 * The diff key is the bundle identity (render/deployment.ts): the sha256 over every node's argv,
 * env, image, mounts, written files and start/stop scripts. It is broader than seed 001's .env
 * identity (body sha256 + profile + overlay line) because a docker or tmux deployment has no .env
 * of its own, and a changed launch line must restart the engine just as a changed key does; for
 * a script recipe the .env is one of the bundle's files, so a changed seed-001 identity always
 * changes the bundle identity too.
 */
import type { DeploymentBundle } from "../render/types";
import type { EngineProps as AllProps } from "./engineWire";
import { providerMoved } from "./providerText";
import { protectedRefusal } from "../text/protected";
import { isSecretKey, SECRET_CONFIG } from "../render/keys";

/** What the decision reads; `drift` is what the plan-time look at the nodes found, in words. */
export type EngineProps = Pick<AllProps, "bundle" | "allow" | "outcome" | "__provider"> & Partial<Pick<AllProps, "secrets" | "drift" | "compact">>;

/** The node list, rank order and target: a change of these stops the old group before the new starts. */
export function shapeOf(b: DeploymentBundle): string {
  return JSON.stringify({ nodes: b.nodes.map((n) => n.node), deploy: b.deploy });
}


/** Which secrets changed since the last up, by their config key; never their values. */
export function rotatedSecrets(olds: Partial<EngineProps>, news: EngineProps): string[] {
  const a = olds.secrets ?? {};
  const b = news.secrets ?? {};
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])];
  return keys.filter((k) => a[k] !== b[k]).map((k) => (isSecretKey(k) ? SECRET_CONFIG[k] : k)).sort();
}

/** Nodes whose ssh address, port or user changed: the next operation dials the new one. */
export function movedConnections(olds: Partial<EngineProps>, news: EngineProps): string[] {
  const before = new Map((olds.bundle?.nodes ?? []).map((n) => [n.node, n.conn]));
  return news.bundle.nodes.flatMap((n) => {
    const o = before.get(n.node);
    if (o === undefined || (o.host === n.conn.host && o.port === n.conn.port && o.user === n.conn.user && o.kind === n.conn.kind)) return [];
    const at = (c: typeof n.conn) => (c.kind === "local" ? "local" : `${c.user}@${c.host}:${c.port}`);
    return [`${n.node}: connection ${at(o)} -> ${at(n.conn)}`];
  });
}

export interface Decision {
  /** Reasons the engine restarts on its nodes (a new bundle, drift, a rotated secret, ...). */
  restart: string[];
  /** Reasons to update the state without restarting (a new address, the provider text). */
  touch: string[];
}

export function decide(olds: Partial<EngineProps>, news: EngineProps): Decision {
  const restart: string[] = [];
  const touch: string[] = [];
  if (news.allow.restart) restart.push("SM121_RESTART=1");
  if (olds.bundle?.identity !== news.bundle.identity) restart.push(olds.bundle === undefined ? "new deployment" : "the rendered bundle changed");
  restart.push(...(news.drift ?? []));
  const rotated = rotatedSecrets(olds, news);
  if (rotated.length > 0) restart.push(`secret rotated: ${rotated.join(", ")}`);
  if (olds.outcome !== undefined && olds.outcome.status !== "serving") restart.push(`the last up left it ${olds.outcome.status}`);
  touch.push(...movedConnections(olds, news));
  if (providerMoved(olds, news)) touch.push("sm121's provider code in the state is rewritten (portable form); no engine restarts for it");
  if (olds.compact === false) touch.push("the state is rewritten in the compact form (the plan shown, the bundle packed); no engine restarts for it");
  return { restart, touch };
}

/** Protected nodes this run would stop or restart something on without the run's allowance. */
export function refusedProtected(b: DeploymentBundle, allowed: readonly string[], what: string): string[] {
  return b.nodes
    .filter((n) => n.protected && !allowed.includes(n.node))
    .map((n) => protectedRefusal(n.node, `this run would ${what} ${b.deployment} on it`));
}

/** SM121_ALLOW_PROTECTED of this process (destroy runs no program, so the provider reads it). */
export function allowedHere(): string[] {
  return (process.env["SM121_ALLOW_PROTECTED"] ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
}
