/**
 * What `sm121 keep` does with one deployment after a look (./keep): pure functions of what the
 * plan-time look saw, the keeper's memory of its repairs and the time.
 *
 * It repairs; it never applies a change nobody applied: a deployment whose nodes show drift that
 * is no health finding (a recipe edited, a site changed, a file edited by hand: the declared
 * bundle is not what the last up applied) is left as it is, and said. Only a dead or hung engine,
 * or one down after its node rebooted or the memory tripwire stopped it, is repaired, by an up of
 * that deployment alone. A protected node without the allowance is never touched. After each
 * failed repair it waits (sm121:keep backoffS, doubling up to backoffMaxS); after maxFailures
 * failures within windowS it gives up until an operator's up serves the deployment, which also
 * ends the count: the next failure is the first again.
 */
import type { KeepSettings } from "../recipe/types";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import type { KeeperRecord } from "../serve/nodelife";
import { msg, type Msg } from "../text/messages";

/** What the keeper remembers of one deployment between passes. */
export interface KeepMemory {
  /** When each failed repair ended (ms), within the window. */
  failures: number[];
  /** No repair before this time (ms): the backoff. */
  notBeforeMs: number;
  /** The tripwire stops already counted as failures (their `at`). */
  tripped: string[];
  /** The last repair's error, said when it gives up. */
  lastError?: Msg;
  /** When the keeper last acted on it (ms): a serve after that was an up of someone else's. */
  actedAtMs: number;
}

export const freshMemory = (): KeepMemory => ({ failures: [], notBeforeMs: 0, tripped: [], actedAtMs: 0 });

export type KeepVerdict =
  | { kind: "well" }
  | { kind: "unknown"; why: Msg[] }
  | { kind: "left"; reason: "changed" | "protected" | "gave-up"; why: Msg[] }
  | { kind: "wait"; why: Msg[]; untilMs: number }
  | { kind: "repair"; why: Msg[] };

/** The failures of `m` still within the window at `now`. */
function within(m: KeepMemory, s: KeepSettings, now: number): number[] {
  return m.failures.filter((at) => now - at < s.windowS * 1000);
}

/**
 * The keeper's verdict on deployment `b`. A stop by the memory tripwire counts as a failed repair
 * (once per stop): the keeper backs off instead of starting the engine into the same wedge.
 */
export function keepVerdict(
  b: DeploymentBundle,
  seen: SiteObservation,
  allowed: readonly string[],
  m: KeepMemory,
  s: KeepSettings,
  now: number,
): KeepVerdict {
  const d = b.deployment;
  const unknown = seen.unknown[d];
  if (unknown !== undefined && unknown.length > 0) return { kind: "unknown", why: unknown };
  const health = seen.health[d] ?? [];
  const changed = [...(seen.unapplied[d] ?? []), ...(seen.drift[d] ?? []).filter((f) => !health.includes(f))];
  if (changed.length > 0) return { kind: "left", reason: "changed", why: [...changed, msg("keep.left.changed")] };
  if (health.length === 0) return { kind: "well" };
  const lives = seen.life[d] ?? {};
  const gaveUp = Object.values(lives).some((l) => l.gaveUp !== undefined);
  if (gaveUp) return { kind: "left", reason: "gave-up", why: health };
  const kept = b.nodes.filter((n) => n.protected && !allowed.includes(n.node)).map((n) => n.node);
  if (kept.length > 0) {
    const why = [...health, msg("keep.left.protected", { nodes: kept.join(", ") })];
    return { kind: "left", reason: "protected", why };
  }
  for (const l of Object.values(lives)) {
    const at = l.tripwire?.at;
    if (at === undefined || m.tripped.includes(at)) continue;
    m.tripped.push(at);
    failed(m, s, now, msg("keep.trippedCause", { at }));
  }
  if (within(m, s, now).length >= s.maxFailures) return { kind: "left", reason: "gave-up", why: health };
  if (now < m.notBeforeMs) return { kind: "wait", why: health, untilMs: m.notBeforeMs };
  return { kind: "repair", why: health };
}

/**
 * A failed repair (or a tripwire stop) at `now`: the next waits backoffS doubling per failure in
 * the window, up to backoffMaxS. True when this failure makes the keeper give up.
 */
export function failed(m: KeepMemory, s: KeepSettings, now: number, error: Msg): boolean {
  m.actedAtMs = now;
  m.failures = [...within(m, s, now), now];
  m.lastError = error;
  m.notBeforeMs = now + backoffMs(m.failures.length, s);
  return m.failures.length >= s.maxFailures;
}

/** The wait after the n-th failure in the window: backoffS doubling per failure, up to backoffMaxS. */
function backoffMs(n: number, s: KeepSettings): number {
  return Math.min(s.backoffS * 2 ** (n - 1), s.backoffMaxS) * 1000;
}

/**
 * The keeper's memory of a deployment from what its first node keeps (keeper.json, cli/keep): a
 * keeper that starts again, and every `--once` run of a schedule, backs off and gives up as one
 * long-running keeper does. After a repair that served, no wait.
 */
export function memoryOf(record: KeeperRecord | undefined, s: KeepSettings, now: number): KeepMemory {
  const m = freshMemory();
  const acted = Date.parse(record?.last?.at ?? "");
  if (Number.isFinite(acted)) m.actedAtMs = acted;
  const times = (record?.failures ?? []).map((f) => Date.parse(f.at)).filter((at) => Number.isFinite(at));
  m.failures = times.filter((at) => now - at < s.windowS * 1000);
  const last = record?.failures.at(-1);
  if (last !== undefined) m.lastError = last.cause;
  const latest = Math.max(...m.failures);
  if (m.failures.length > 0 && record?.last?.action !== "repaired")
    m.notBeforeMs = latest + backoffMs(m.failures.length, s);
  return m;
}

/** A repair that served the deployment again: no wait before the next one. */
export function repaired(m: KeepMemory, now: number): void {
  m.actedAtMs = now;
  m.notBeforeMs = 0;
}

/**
 * The memory to decide with, given what the deployment's first node says (`readyAt`: when an up
 * last served it there, by that node's clock): an up that served it after the keeper's last action
 * was someone else's (an operator's), so the failures before it count no longer: the keeper tries
 * again, and gives up only after maxFailures more. The tripwire stops already counted stay counted.
 */
export function sinceServed(m: KeepMemory, readyAt: string | undefined): KeepMemory {
  const ready = Date.parse(readyAt ?? "");
  if (m.failures.length === 0 || !Number.isFinite(ready) || ready <= m.actedAtMs) return m;
  return { ...freshMemory(), tripped: m.tripped };
}
