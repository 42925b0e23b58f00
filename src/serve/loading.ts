/** A load is not a hang: the look's liveness verdict for an engine still within its readiness wait. */
import type { LiveCheck } from "./liveness";
import { parseTime } from "./outcome";

/**
 * An engine that does not answer /v1/models yet and started less than `loadingS` (its readiness
 * wait) ago is loading, not hung: the up that started it may have been interrupted (Ctrl-C), and
 * the next one waits for it rather than restarting the load.
 */
export function loadingOr(
  live: LiveCheck,
  startedAt: string | undefined,
  loadingS: number,
  readyAt?: string,
  now = Date.now(),
): LiveCheck {
  const started = parseTime(startedAt);
  if (live.verdict !== "hung" || live.modelsCode === 200 || started === undefined) return live;
  // An engine an up found ready after it started has loaded: answering nothing now is a hang.
  const ready = parseTime(readyAt);
  if (ready !== undefined && ready >= Math.floor(started / 1000) * 1000) return live;
  return now - started < loadingS * 1000 ? { ...live, verdict: "loading" } : live;
}
