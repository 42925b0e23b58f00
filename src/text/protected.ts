/**
 * The one wording of a refusal on a protected node, wherever it is decided (the plan-time look,
 * the engine's check and delete, ImageSync): what the run would do there, and the allowance, in
 * the locale of the process that refuses (a refusal is said, never stored). `sm121 down` finds
 * these lines in Pulumi's output by the shape of this message in any of the six catalogues.
 */
import { msg, say, type Msg } from "./messages";

export function protectedRefusal(node: string, situation: Msg): string {
  return say(msg("serve.protected", { node, situation }));
}
