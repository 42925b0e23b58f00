/**
 * Every script `pulumi up` runs on a node, by step, from the same generators serve uses
 * (src/serve/steps.ts, src/serve/readiness.ts): what `sm121 render` prints. The order and the
 * choice per node are serve.ts's (serveOn, finish): a node that runs no engine process gets `:`
 * as its start, and a node without an API is checked through its status script instead of
 * /v1/models.
 *
 * What only the run knows is shown as a placeholder: the UTC stamp of the backups and the .env's
 * rendered time; the secrets set in the stack (sm121:hfToken, sm121:apiKey) as their config
 * names, never their values.
 */
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { envPathOf, watchedPaths } from "../serve/probe";
import { readinessScript, verifyScript } from "../serve/readiness";
import { memGateScript, preflightScript, stopScript, writeScript } from "../serve/steps";

export const STEPS = ["preflight", "stop", "memory-gate", "write", "start", "readiness", "verify"] as const;
export type Step = (typeof STEPS)[number];

export function isStep(name: string): name is Step {
  return (STEPS as readonly string[]).includes(name);
}

/** The run's UTC time, which the up fills in. */
export const STAMP_PLACEHOLDER = "YYYYMMDDTHHMMSSZ";
export const RENDERED_PLACEHOLDER = "YYYY-MM-DDTHH:MM:SSZ";

/** The secrets of the stack, by .env key, each shown as the config key that holds it. */
export type SecretNames = Partial<Record<"HF_TOKEN" | "API_KEY", string>>;

export function stepScripts(b: DeploymentBundle, nb: NodeBundle, secrets: SecretNames): Record<Step, string> {
  const placeholders = Object.fromEntries(Object.entries(secrets).map(([k, name]) => [k, `<secret ${name}>`]));
  return {
    preflight: preflightScript(nb, watchedPaths(nb), nb.api?.port, envPathOf(nb)),
    stop: stopScript(nb),
    "memory-gate": memGateScript(nb.memGateGiB, b.memTimeoutS),
    write: writeScript(nb, { stamp: STAMP_PLACEHOLDER, renderedAt: RENDERED_PLACEHOLDER, secrets: placeholders, identity: nb.identity }),
    start: nb.runs ? nb.start : ":",
    readiness: nb.api === undefined ? nb.status : readinessScript(nb, b.readiness),
    verify: nb.api === undefined ? ":" : [verifyScript(nb, b.readiness), nb.status].join("\n"),
  };
}
