/**
 * The engine settings the memory fit depends on, read the way each engine reads them (its
 * driver's `memory`: src/engines): the context length, the concurrent sequences, the fraction of
 * the node's memory the engine may take, the KV cache dtype and pipeline parallelism. Nothing here
 * knows an engine: adding one touches its driver alone.
 */
import { driverFor } from "../engines";
import type { FitKnobs } from "../engines/memory";
import type { Recipe } from "../recipe/types";
import type { DeploymentBundle } from "./types";

export type { FitKnobs, Sourced } from "../engines/memory";

/** The knobs of a deployment as rendered, from its recipe (and, for a script recipe, its profile's keys). */
export function knobsOf(b: DeploymentBundle, recipe: Recipe | undefined): FitKnobs {
  return driverFor(b.engine).memory.knobs({
    ...(recipe !== undefined && { recipe }),
    ...(b.deploy === "script" && { keys: b.nodes[0]?.envKeys ?? {} }),
    nodes: b.nodes.length,
    ...(b.readiness.maxModelLen !== undefined && { readinessMaxLen: b.readiness.maxModelLen }),
  });
}
