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
 * proxy reads under router_settings): a request that fails on one is retried at once, and the
 * replica that failed leaves every pick for a while (allowed_fails 0: cooled down at its first
 * failure), so that a retry lands on another replica rather than on the one restarting.
 */
export const LITELLM_ROUTER = { num_retries: 3, retry_after: 0, allowed_fails: 0, cooldown_time: 5 } as const;

/**
 * How long a replica that answers again waits before the next one of its roll stops, per format:
 * LiteLLM reads no file again, and picks a replica it cooled down (each failed request to the one
 * restarting) only once its cooldown ends; were the next to stop before, every replica would be
 * cooling down and the proxy would refuse the model ("All deployments ... are in cooldown").
 */
export const ROLL_SETTLE_S = {
  sm121: 0,
  "llama-swap": 0,
  litellm: LITELLM_ROUTER.cooldown_time + 1,
} as const satisfies Record<GatewayFormat, number>;

/**
 * Whether a running gateway of this format reads its file again by itself, so that a replica whose
 * entries leave the file gets nothing new from it: llama-swap with -watch-config (or its SIGHUP)
 * loads the file anew. LiteLLM's proxy reads its config file only at start; its management routes
 * (/model/delete, /model/block, /model/update) change only models stored in its database, and
 * refuse a model of the config file ("Cannot edit config-based model"), so a file sm121 writes
 * cannot be told anything while it runs. seed 001's gateway reads its file only at start.
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
    settleS: format === undefined ? 0 : ROLL_SETTLE_S[format],
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
