/**
 * What a failed node step means, for the operator: the private exit codes of sm121's node
 * scripts (one table that the scripts and this reader share), the advice that fits the failure,
 * and the masking that keeps secrets out of every message that quotes what a node printed.
 */
import { CommandError } from "../remote";
import type { DeploymentBundle } from "../render/types";

/** Private exit codes of sm121's node scripts. */
export const EXIT = {
  memoryGate: 3,
  engineExited: 4,
  readinessTimeout: 5,
  hookFailed: 6,
  displaceFailed: 7,
  noFirstToken: 8,
  keyRefused: 9,
} as const;

/** Secret values and `KEY=value` assignments of secret keys, masked in text quoted from a node. */
export function maskSecrets(text: string, secrets: Readonly<Record<string, string>>): string {
  let out = text;
  for (const v of Object.values(secrets)) if (v.length >= 4) out = out.split(v).join("****");
  return out.replace(/\b((?:VLLM_|SGLANG_)?API_KEY|HF_TOKEN|--api-key)([=\s]+)("?)[^\s"']+\3/g, "$1$2$3****$3");
}

/** The specific way forward for a failed step, or "" when the generic one is all there is. */
export function failureAdvice(e: unknown, b: DeploymentBundle): string {
  if (!(e instanceof CommandError)) return "";
  const on = `on ${e.node}`;
  switch (e.code) {
    case EXIT.memoryGate:
      return (
        `Nothing was started ${on}: free memory there (\`sm121 status\` shows what holds it) or lower ` +
        "minMemAvailableGiB for the node (this once: SM121_MIN_MEM_GIB=<GiB> pulumi up), then run `pulumi up`."
      );
    case EXIT.engineExited:
      return `The engine ${on} exited while loading; its own reason is in the output above (engine log${b.deploy === "script" ? ", start.sh output" : ""}). Fix that and run \`pulumi up\`, or go back as below.`;
    case EXIT.readinessTimeout:
      return (
        `The engine ${on} still runs but did not answer in ${b.readiness.timeoutS} s: if it is still loading, ` +
        `raise readiness.timeout_s in ${b.recipeFile} ` +
        "(or wait longer this once: SM121_TIMEOUT_S=<seconds> pulumi up); " +
        `\`sm121 logs ${b.deployment}\` shows where it is.`
      );
    case EXIT.noFirstToken:
      return `The engine ${on} answers /v1/models but generated no token for a one-token chat completion: \`sm121 logs ${b.deployment}\` shows what it does (a kernel that does not run on sm_121, a wedged scheduler); fix that and run \`pulumi up\`, or go back as below.`;
    case EXIT.hookFailed:
      return `A hook ${on} failed (above); the engine was not started there. Fix the hook in ${b.recipeFile} or the node, then run \`pulumi up\`.`;
    case EXIT.keyRefused:
      return (
        `The engine ${on} answers, but not to the key sm121 sends: the key it was started with differs from ` +
        "sm121:apiKey (an API_KEY line of the node's own .env, a hand-edited secrets.env), or it wants one and sm121 " +
        "holds none. Make them agree (`pulumi config set --secret sm121:apiKey`, or the node's .env), then run " +
        "`pulumi up`."
      );
    case EXIT.displaceFailed:
      return `The deployment that ran ${on} before could not be stopped; stop it there by hand (its stop script is in the node's sm121 state dir), then run \`pulumi up\`.`;
    default:
      return "";
  }
}
