/**
 * What a gateway needs for a roll of replicas (render/replicas), apart from the file formats
 * themselves (./formats), so that the engine's provider reads it without loading them.
 */
import type { GatewayFormat, Recipe } from "../recipe/types";
import { recipeShutdownS } from "../engines/options/recipe";
import type { Leave, ReplicaPlace, RollStep } from "../render/replicas";
import { t } from "../text/messages";
import type { DeploymentBundle } from "../render/types";

/**
 * LiteLLM's router settings for a model served by replicas (keys of litellm.Router, which the
 * proxy reads under router_settings). A request that fails on a replica (one that refuses new
 * requests at its stop, or does not answer while it restarts) is retried at once, and at the end
 * of its retries sent to another replica of the model with the one that failed left out
 * (enable_weighted_failover): every request lands on a replica that serves while any does.
 * Cooldowns are off: a replica cooled down for a failure leaves every pick for a while, and under
 * load the one that still serves was cooled down too ("All deployments ... are in cooldown"); the
 * failover already keeps each request off the replica that failed it, and the up disables an
 * unreachable node's endpoints in the file.
 */
export const LITELLM_ROUTER = {
  num_retries: 3,
  retry_after: 0,
  enable_weighted_failover: true,
  disable_cooldowns: true,
} as const;

/**
 * Whether a running gateway of this format reads its file again by itself, so that a replica whose
 * entries leave the file gets nothing new from it: llama-swap with -watch-config (or its SIGHUP)
 * loads the file anew. LiteLLM's proxy (1.108.7) reads its config file only at start and has no
 * route that reads it again; its management routes (/model/delete, /model/block, /model/update)
 * change only models stored in its database: without one they answer "No DB Connected", with one
 * they refuse a model of the config file ("Cannot edit config-based model"). So a proxy that runs
 * sm121's file cannot be told anything while it runs; what takes a stopping replica out of its
 * picks is the failover of LITELLM_ROUTER. seed 001's gateway reads its file only at start.
 */
export const READS_FILE_AGAIN = {
  sm121: false,
  "llama-swap": true,
  litellm: false,
} as const satisfies Record<GatewayFormat, boolean>;

export function rollStep(format: GatewayFormat | undefined, graceS: number): RollStep {
  const told = format !== undefined && READS_FILE_AGAIN[format];
  const leave: Leave = told ? "gateway" : graceS > 0 ? "engine" : "quiet";
  return {
    ...(format !== undefined && { format }),
    leave,
    graceS,
  };
}

/** Each replica's step, from its recipe (the plan's: render/replicas replicaPlaces). */
export function rollStepOf(
  format: GatewayFormat | undefined,
  recipes: ReadonlyMap<string, Recipe>,
): (b: DeploymentBundle) => RollStep {
  return (b) => {
    const r = recipes.get(b.recipe);
    return rollStep(format, r === undefined ? 0 : recipeShutdownS(r));
  };
}

/**
 * The plan's words for how a set's replicas leave the rotation (one at a time), and which requests
 * that can still cut: none where the gateway is told, those that outlast the engine's grace where
 * it refuses new ones at its stop, those that reach it in its last second otherwise.
 */
export function leaveWords(members: readonly string[], places: ReadonlyMap<string, ReplicaPlace>): string | undefined {
  const own = members.flatMap((d) => {
    const p = places.get(d);
    return p?.step === undefined ? [] : [{ d, step: p.step, drainS: p.drain?.boundS ?? 0 }];
  });
  const first = own[0];
  if (first === undefined) return undefined;
  const format = first.step.format;
  const kinds = [...new Set(own.map((o) => `${o.step.leave} ${o.step.graceS} ${o.drainS}`))];
  const parts = kinds.map((k) => {
    const group = own.filter((o) => `${o.step.leave} ${o.step.graceS} ${o.drainS}` === k);
    const { step, drainS } = group[0] ?? first;
    const names = group.map((o) => o.d).join(", ");
    if (step.leave === "gateway") return t("roll.leaveGateway", { format: format ?? "", drainS });
    if (step.leave === "engine") return t("roll.leaveEngine", { members: names, grace: step.graceS });
    return t("roll.leaveQuiet", { members: names, drainS });
  });
  const told = first.step.leave === "gateway";
  const head = format === undefined ? [t("roll.noGateway")] : told ? [] : [t("roll.cannotTell", { format })];
  return [...head, ...parts].join("; ");
}
