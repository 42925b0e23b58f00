/**
 * A recipe's `[gate]`: the short load an up runs against the first replica it restarts (or the
 * only deployment), and how much slower than the recorded baseline it may be (serve/gate runs it,
 * serve/gatejudge judges it). The prompts are sm121's own fixed set, so every run of a gate asks
 * the same questions.
 */
import { z } from "zod";
import { msg } from "../text/messages";
import { zodMsg } from "./issues";

/** The gate of a recipe, as sm121 works with it. */
export interface RecipeGate {
  /** Requests of the load, each a streamed chat completion. */
  requests: number;
  /** Requests in flight at once. */
  concurrency: number;
  /** Words of each prompt (the shipped prompt set, cut or repeated to this length; about a token each). */
  promptTokens: number;
  /** Tokens of each answer: the engine is asked to ignore its end-of-sequence token. */
  maxTokens: number;
  /** The gate fails below (1 - this) x the baseline's output tokens per second. */
  tokensPerSTolerance: number;
  /** The gate fails above (1 + this) x the baseline's median time to first token. */
  ttftTolerance: number;
}

export const GATE_DEFAULTS: RecipeGate = {
  requests: 16,
  concurrency: 4,
  promptTokens: 256,
  maxTokens: 128,
  tokensPerSTolerance: 0.1,
  ttftTolerance: 0.25,
};

/** The `[gate]` table's schema (built with the recipe's). */
export function gateSchema() {
  const count = (max: number) =>
    z
      .int({ error: zodMsg(msg("spec.gate.count", { max }), msg("spec.gate.countFix")) })
      .min(1, { error: zodMsg(msg("spec.gate.count", { max }), msg("spec.gate.countFix")) })
      .max(max, { error: zodMsg(msg("spec.gate.count", { max }), msg("spec.gate.countFix")) });
  const share = (max: number, example: string) => {
    const e = { error: zodMsg(msg("spec.gate.tolerance", { max }), msg("spec.gate.toleranceFix", { example })) };
    return z.number(e).gt(0, e).lt(max, e);
  };
  return z.strictObject({
    requests: count(10_000).default(GATE_DEFAULTS.requests),
    concurrency: count(1024).default(GATE_DEFAULTS.concurrency),
    prompt_tokens: count(100_000).default(GATE_DEFAULTS.promptTokens),
    max_tokens: count(100_000).default(GATE_DEFAULTS.maxTokens),
    tokens_per_s_tolerance: share(1, "0.1").default(GATE_DEFAULTS.tokensPerSTolerance),
    ttft_tolerance: share(10, "0.25").default(GATE_DEFAULTS.ttftTolerance),
  });
}

/** The parsed table, in sm121's names. */
export function gateOf(g: z.infer<ReturnType<typeof gateSchema>>): RecipeGate {
  return {
    requests: g.requests,
    concurrency: g.concurrency,
    promptTokens: g.prompt_tokens,
    maxTokens: g.max_tokens,
    tokensPerSTolerance: g.tokens_per_s_tolerance,
    ttftTolerance: g.ttft_tolerance,
  };
}
