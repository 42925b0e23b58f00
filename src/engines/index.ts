/** The engine registry, typed so that a missing driver fails to compile. */
import type { DeployTarget, EngineName } from "../recipe/types";
import type { EngineDriver } from "./driver";
import { dgpp } from "../dgpp/driver.engines";
import { gr8 } from "./gr8";
import { sglang } from "./sglang";
import { vllm } from "./vllm";

export const DRIVERS = { vllm, sglang, gr8, dgpp } satisfies Record<EngineName, EngineDriver>;

export function driverFor(engine: EngineName): EngineDriver {
  return DRIVERS[engine];
}

/**
 * Who holds the key a deployment's endpoint asks for, the one rule the plan, the up's warnings,
 * the gateway file and sm121:requireApiKey follow:
 * - "sm121": the engine is started with sm121:apiKey (vLLM from secrets.env, SGLang from its key file);
 * - "node": a script recipe, whose start.sh gives the engine the API_KEY of the node's .env (sm121
 *   never writes sm121:apiKey there: start.sh puts it on the engine's command line);
 * - "none": the engine takes no key at all (gr8, DGPP): its /v1 answers anyone who reaches it.
 */
export function endpointKey(b: { engine: EngineName; deploy: DeployTarget }): "sm121" | "node" | "none" {
  if (driverFor(b.engine).apiKey === "none") return "none";
  return b.deploy === "script" ? "node" : "sm121";
}

export type { EngineDriver, EngineFlagsCtx, LaunchShape } from "./driver";
export { engineArgv } from "./args";
