/**
 * What a failed node step means, for the operator: the private exit codes of sm121's node
 * scripts (one table that the scripts and this reader share), the advice that fits the failure,
 * and the masking that keeps secrets out of every message that quotes what a node printed.
 */
import { CommandError } from "../remote";
import type { DeploymentBundle } from "../render/types";
import { t } from "../text/messages";

/** Private exit codes of sm121's node scripts. */
export const EXIT = {
  memoryGate: 3,
  engineExited: 4,
  readinessTimeout: 5,
  hookFailed: 6,
  displaceFailed: 7,
  noFirstToken: 8,
  keyRefused: 9,
  tripwire: 10,
} as const;

/**
 * Secret values, and the values of secret keys as engines print them (`API_KEY=x`, `--api-key x`,
 * SGLang's `api_key='x'` in its server arguments at start), masked in text quoted from a node.
 */
export function maskSecrets(text: string, secrets: Readonly<Record<string, string>>): string {
  let out = text;
  for (const v of Object.values(secrets)) if (v.length >= 4) out = out.split(v).join("****");
  const assigned =
    /(?<![\w-])((?:VLLM_|SGLANG_)?API_KEY|HF_TOKEN|--api-key|--hf-token)(\s*=\s*|\s+)(["']?)[^\s"',)]+\3/gi;
  return out.replace(assigned, "$1$2$3****$3");
}

/**
 * The specific way forward for a failed step, or "" when the generic one is all there is: said in
 * the operator's language (printed with the failure, never stored).
 */
export function failureAdvice(e: unknown, b: DeploymentBundle): string {
  if (!(e instanceof CommandError)) return "";
  const node = e.node;
  const logs = { node, deployment: b.deployment };
  switch (e.code) {
    case EXIT.memoryGate:
      return t("state.advice.memoryGate", { node });
    case EXIT.engineExited:
      return t(b.deploy === "script" ? "state.advice.engineExitedScript" : "state.advice.engineExited", { node });
    case EXIT.readinessTimeout:
      return t("state.advice.readinessTimeout", { ...logs, timeoutS: b.readiness.timeoutS, file: b.recipeFile });
    case EXIT.noFirstToken:
      return t("state.advice.noFirstToken", logs);
    case EXIT.hookFailed:
      return t("state.advice.hookFailed", { node, file: b.recipeFile });
    case EXIT.keyRefused:
      return t("state.advice.keyRefused", { node });
    case EXIT.tripwire:
      return t("state.advice.tripwire", { node, file: b.recipeFile });
    case EXIT.displaceFailed:
      return t("state.advice.displaceFailed", { node });
    default:
      return "";
  }
}
