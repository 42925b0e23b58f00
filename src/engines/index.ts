/** The engine registry, typed so that a missing driver fails to compile. */
import type { EngineName } from "../recipe/types";
import type { EngineDriver } from "./driver";
import { dgpp } from "./dgpp";
import { gr8 } from "./gr8";
import { sglang } from "./sglang";
import { vllm } from "./vllm";

export const DRIVERS = { vllm, sglang, gr8, dgpp } satisfies Record<EngineName, EngineDriver>;

export function driverFor(engine: EngineName): EngineDriver {
  return DRIVERS[engine];
}

export type { EngineDriver, EngineFlagsCtx, LaunchShape } from "./driver";
export { engineArgv } from "./args";
