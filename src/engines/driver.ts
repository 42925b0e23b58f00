/**
 * The EngineDriver interface of seed 000: everything that differs between inference engines,
 * in one place, so that no other code branches on the engine name.
 */
import type { EngineName, Recipe } from "../recipe/types";

/** How the processes of a deployment relate: every node runs the engine, or rank 0 runs a manager. */
export type LaunchShape = "per-node" | "head-coordinated";

export interface EngineFlagsCtx {
  recipe: Recipe;
  rank: number;
  /** Number of launch nodes. */
  nnodes: number;
  /** The launch nodes' IPs in rank order (gr8's --peers; rank 0 is the rendezvous head). */
  peers: string[];
  /** This node's bind address for --host. */
  bindHost: string;
  /** The recipe's API port. */
  port: number;
}

export interface EngineDriver {
  readonly name: EngineName;
  readonly shape: LaunchShape;
  /** Model argument: positional (vLLM `serve`), --model-path (SGLang), --model (gr8), none (DGPP). */
  modelArgs(recipe: Recipe, entrypoint: readonly string[]): string[];
  /** The tensor-parallel and served-name flags that every node passes. */
  parallelArgs(recipe: Recipe, ctx: EngineFlagsCtx): string[];
  /** Distributed rendezvous flags; DGPP: none (the cluster JSON carries them). */
  distributedArgs(ctx: EngineFlagsCtx): string[];
  /** Non-head workers run headless (vLLM). */
  readonly headlessWorkers: boolean;
  /** Env var carrying the node's bind IP. */
  readonly engineIpEnv: string | undefined;
  /** Takes --host/--port. Engines with a fixed API port return false. */
  readonly takesHostPort: boolean;
  /** With takesHostPort: every node gets --host/--port (SGLang), or only rank 0 (vLLM). */
  readonly hostPortOnAllNodes: boolean;
  /** Where the OpenAI API answers: the rank that serves it and its port. */
  apiPort(recipe: Recipe): number;
  /** The entrypoint when the recipe sets none. */
  entrypointDefault(): string[];
  /** What doctor prints when the engine binary is missing. */
  readonly installHint: string;
  /** A regular expression (source) for the KV cache line of the engine's log, with the size as group 1. */
  readonly kvCachePattern: string | undefined;
}

/** The rendezvous port: the API port + 1000, so two deployments on one node never collide. */
export function rendezvousPort(port: number): number {
  return port + 1000;
}
