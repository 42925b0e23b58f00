/**
 * The gate's verdict, pure: the numbers of this run against the baseline the deployment's state
 * records (its tokens per second, its median time to first token, the bundle and the image digest
 * they belong to, and the load they were measured with), and, when it is slower, what changed
 * since: the flags, the image and its digest, the profile keys. ./gate measures; the provider
 * (providers/engineGate) stores and acts.
 */
import type { RecipeGate } from "../recipe/gate";
import { argvFacts } from "../render/plan";
import { isSecretKey } from "../render/keys";
import { looksSecret } from "../text/secrets";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { listMsg, msg, type Msg } from "../text/messages";

/** What the gate's load was: a baseline compares only with runs of the same load. */
export interface GateLoad {
  requests: number;
  concurrency: number;
  promptTokens: number;
  maxTokens: number;
  /** The prompt set's name (serve/gateprompts). */
  prompts: string;
}

/** One run of the gate: its numbers, and what they belong to. */
export interface GateMeasure {
  /** Output tokens of every request over the run's wall time. */
  tokensPerS: number;
  /** The median time to first token of the requests, in ms. */
  ttftMs: number;
  durationS: number;
  load: GateLoad;
  /** When it ran (ISO time). */
  at: string;
  /** The node it ran against. */
  node: string;
  /** The bundle identity that served it. */
  identity: string;
  /** The image the node ran, by its digest (docker deployments). */
  digest?: string;
}

export type GateVerdict = "baseline" | "new-load" | "passed" | "accepted" | "slower";

/** What the state keeps of the gate: the baseline, and the last run with its verdict. */
export interface GateState {
  baseline?: GateMeasure;
  last?: GateMeasure & { verdict: GateVerdict };
}

/** The tolerances as limits on this run's numbers. */
export function gateLimits(spec: RecipeGate, base: GateMeasure): { tokensPerS: number; ttftMs: number } {
  return {
    tokensPerS: base.tokensPerS * (1 - spec.tokensPerSTolerance),
    ttftMs: base.ttftMs * (1 + spec.ttftTolerance),
  };
}

/** Whether two runs had the same load, field by field (the state may keep an object's keys in another order). */
export function sameLoad(a: GateLoad, b: GateLoad): boolean {
  const keys: readonly (keyof GateLoad)[] = ["requests", "concurrency", "promptTokens", "maxTokens", "prompts"];
  return keys.every((k) => a[k] === b[k]);
}

/**
 * The verdict: the first run records the baseline, as does a run with another load; within both
 * tolerances it passes; slower on either, it fails unless the operator accepts it for this run.
 */
export function judgeGate(
  spec: RecipeGate,
  base: GateMeasure | undefined,
  now: GateMeasure,
  accepted: boolean,
): GateVerdict {
  if (base === undefined) return "baseline";
  if (!sameLoad(base.load, now.load)) return "new-load";
  const limit = gateLimits(spec, base);
  if (now.tokensPerS >= limit.tokensPerS && now.ttftMs <= limit.ttftMs) return "passed";
  return accepted ? "accepted" : "slower";
}

/** The state after a run: a verdict other than "slower" makes this run the baseline. */
export function nextGateState(before: GateState | undefined, now: GateMeasure, verdict: GateVerdict): GateState {
  const baseline = verdict === "slower" ? before?.baseline : now;
  return { ...(baseline !== undefined && { baseline }), last: { ...now, verdict } };
}

const one = (v: number) => v.toFixed(1);
const whole = (v: number) => String(Math.round(v));

/** The numbers side by side, a line each: the baseline, this run, the limit, and which failed. */
export function gateRows(spec: RecipeGate, base: GateMeasure, now: GateMeasure): Msg[] {
  const limit = gateLimits(spec, base);
  const row = (what: Msg, b: string, n: string, l: Msg, ok: boolean) =>
    msg("serve.gate.row", { what, base: b, now: n, limit: l, verdict: msg(ok ? "serve.gate.ok" : "serve.gate.worse") });
  return [
    row(
      msg("serve.gate.tokensPerS"),
      one(base.tokensPerS),
      one(now.tokensPerS),
      msg("serve.gate.atLeast", { value: one(limit.tokensPerS) }),
      now.tokensPerS >= limit.tokensPerS,
    ),
    row(
      msg("serve.gate.ttft"),
      whole(base.ttftMs),
      whole(now.ttftMs),
      msg("serve.gate.atMost", { value: whole(limit.ttftMs) }),
      now.ttftMs <= limit.ttftMs,
    ),
  ];
}

const apiNode = (b: DeploymentBundle): NodeBundle | undefined => b.nodes.find((n) => n.api !== undefined) ?? b.nodes[0];

/** `removed` and `added` of two lists of facts, in their order. */
function moved(before: readonly string[], after: readonly string[]): { removed: string[]; added: string[] } {
  return { removed: before.filter((f) => !after.includes(f)), added: after.filter((f) => !before.includes(f)) };
}

/** A key map's changes, `KEY a -> b`, a secret's value never said. */
function keyChanges(before: Record<string, string>, after: Record<string, string>): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(after)])].sort();
  const shown = (k: string, v: string | undefined) =>
    v === undefined ? "(unset)" : isSecretKey(k) || looksSecret(k, v) ? "(secret)" : v;
  return keys.filter((k) => before[k] !== after[k]).map((k) => `${k} ${shown(k, before[k])} -> ${shown(k, after[k])}`);
}

/**
 * What changed between the bundle (and image digest) of the baseline and this run's: the engine's
 * flags, the image and its digest, the profile's .env keys, the environment. None: the difference
 * is the engine's or the machine's, not the recipe's.
 */
export function gateChanges(
  before: DeploymentBundle | undefined,
  after: DeploymentBundle,
  digests: { before?: string | undefined; after?: string | undefined },
): Msg {
  const parts: Msg[] = [];
  const a = before === undefined ? undefined : apiNode(before);
  const b = apiNode(after);
  if (a !== undefined && b !== undefined) {
    const flags = moved(argvFacts(a.argv), argvFacts(b.argv));
    const said = [...flags.removed.map((f) => `- ${f}`), ...flags.added.map((f) => `+ ${f}`)];
    if (said.length > 0) parts.push(msg("serve.gate.changedFlags", { flags: said.join(", ") }));
    if (a.image !== b.image) parts.push(msg("serve.gate.changedImage", { from: a.image ?? "-", to: b.image ?? "-" }));
    const keys = keyChanges(a.envKeys ?? {}, b.envKeys ?? {});
    if (keys.length > 0) parts.push(msg("serve.gate.changedKeys", { keys: keys.join(", ") }));
    const env = keyChanges(a.env, b.env);
    if (env.length > 0) parts.push(msg("serve.gate.changedEnv", { keys: env.join(", ") }));
  }
  const d = digests;
  if (d.before !== undefined && d.after !== undefined && d.before !== d.after)
    parts.push(msg("serve.gate.changedDigest", { from: shortDigest(d.before), to: shortDigest(d.after) }));
  return parts.length > 0 ? listMsg(parts, "semi") : msg("serve.gate.changedNothing");
}

/** `sha256:` and the first 12 hex digits, as docker shows an image ID. */
export function shortDigest(d: string): string {
  return d.startsWith("sha256:") ? d.slice(0, 19) : d.slice(0, 12);
}
