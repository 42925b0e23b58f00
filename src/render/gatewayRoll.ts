/**
 * What a gateway needs for a roll of replicas (render/replicas), apart from the file formats
 * themselves (./gatewayFormats), so that the engine's provider reads it without loading them.
 */
import type { GatewayFormat } from "../recipe/types";

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
