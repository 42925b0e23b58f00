/**
 * The one wording of a refusal on a protected node, wherever it is decided (the plan-time look,
 * the engine's check and delete, ImageSync, `sm121 down`): what the run would do there, and the
 * allowance, in the locale of the process that refuses (a refusal is said, never stored).
 */
import { msg, say, type Msg } from "./messages";

export function protectedRefusal(node: string, situation: Msg): string {
  return say(msg("serve.protected", { node, situation }));
}

/** The nodes SM121_ALLOW_PROTECTED allows this run to stop or restart, from the environment. */
export function allowedProtected(env: Readonly<Record<string, string | undefined>>): string[] {
  return (env["SM121_ALLOW_PROTECTED"] ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * The refusal of a run that would stop `deployment` on protected `node` where the deployment
 * leaves the node: `sm121 down` takes it down, or the site no longer puts it there.
 */
export function leavingRefusal(node: string, deployment: string, byDown: boolean): string {
  return protectedRefusal(node, msg(byDown ? "serve.wouldStopDown" : "serve.wouldStopGone", { deployment }));
}
