/**
 * The EngineDriver interface of seed 000: everything that differs between inference engines,
 * in one place, so that no other code branches on the engine name.
 */
import type { FieldPath } from "../recipe/locate";
import { msg, type Msg } from "../text/messages";
import type { EngineName, Recipe } from "../recipe/types";
import type { ArgProblem } from "./options/check";
import type { OptionTable } from "./options/table";
import type { FieldProblem, RecipeFields } from "./rules";
import type { EngineMemory } from "./memory";

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
  /** Where the engine reads the API key file that the start script writes, for engines that take one. */
  keyFile?: string;
}

/** Why a deployment's launch cannot work, and what to change. */
export interface LaunchProblem {
  problem: Msg;
  fix: Msg;
  /** The recipe field the problem is at (`["tp"]`, `["args", 3]`); none: the deployment's nodes. */
  field?: FieldPath;
}

/** Where a deployment runs: its launch nodes and the GPUs each has (a DGX Spark has one GB10). */
export interface LaunchLayout {
  nodes: number;
  gpusPerNode: number;
  /** The option table the recipe's args are read with (engines that have one). */
  table?: OptionTable;
  /** How messages name the deployment, e.g. "deployment pair (Pulumi.prod.yaml:14)". */
  deployment?: Msg;
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
  /** The environment the engine reads on a node: its own address, the collectives' interfaces. */
  engineEnv(recipe: Recipe, nodeIp: string): Record<string, string>;
  /**
   * How the engine gets sm121:apiKey without argv: "env" (VLLM_API_KEY from secrets.env),
   * "key-file" (a 0600 YAML file the start script writes, passed by apiKeyArgs), or "none".
   */
  readonly apiKey: "env" | "key-file" | "none";
  /** The flags that hand the engine its key file (`keyFile` as the engine sees the path). */
  apiKeyArgs(keyFile: string): string[];
  /** Takes --host/--port. Engines with a fixed API port return false. */
  readonly takesHostPort: boolean;
  /** With takesHostPort: every node gets --host/--port (SGLang), or only rank 0 (vLLM). */
  readonly hostPortOnAllNodes: boolean;
  /** Where the OpenAI API answers: the rank that serves it and its port. */
  apiPort(recipe: Recipe): number;
  /** The entrypoint when the recipe sets none. */
  entrypointDefault(): string[];
  /** The engine's own rules over the recipe's fields (port, served name, deploy target, blocks). */
  recipeProblems(r: RecipeFields): FieldProblem[];
  /**
   * The recipe's `args` as the engine's own parser reads them (the table of the engine's version,
   * else the newest): each problem at its token.
   */
  checkArgs(args: readonly string[], table?: OptionTable): Iterable<ArgProblem>;
  /** Why this recipe cannot run on this layout (a rule the engine enforces at start), if it cannot. */
  launchProblem(recipe: Recipe, layout: LaunchLayout): LaunchProblem | undefined;
  /** Files the engine opens while it parses its arguments (vLLM's `--config`): they must exist on the node. */
  startFiles(recipe: Recipe): Array<{ path: string; why: string }>;
  /** What doctor prints when the engine binary is missing (in the bundle's preflight: in English). */
  readonly installHint: Msg;
  /** What the memory fit needs: the utilization setting and its default, the overhead, the knobs. */
  readonly memory: EngineMemory;
  /** A regular expression (source) for the KV cache line of the engine's log, with the size as group 1. */
  readonly kvCachePattern: string | undefined;
  /**
   * How the engine exports Prometheus metrics, on the API port of the node that serves the API;
   * undefined when it exports nothing Prometheus reads.
   */
  readonly metrics: EngineMetrics | undefined;
}

/** The Prometheus series that status reads and the dashboard queries, by what they measure. */
export interface MetricSeries {
  /** Gauges: requests in the running batch, requests queued, the KV cache's used fraction (0 to 1). */
  running: string;
  waiting: string;
  kvUsage: string;
  /** Counters (their `_total` samples): prompt and generated tokens, finished requests. */
  promptTokens: string;
  generationTokens: string;
  requests: string;
  /** Histograms (their base names): time to first token, between tokens, whole request. */
  ttft: string;
  itl: string;
  e2e: string;
}

export interface EngineMetrics {
  /** The flags that turn the exporter on (every rank gets them), none when it is always on. */
  flags: string[];
  /** The HTTP path on the API port. */
  path: string;
  series: MetricSeries;
}

/** The rendezvous port: the API port + 1000, so two deployments on one node never collide. */
export function rendezvousPort(port: number): number {
  return port + 1000;
}

/**
 * One rank per GPU: tp x pp ranks must be exactly the deployment's GPUs, its nodes x the GPUs of
 * each. More ranks than GPUs stop the engine at start ("World size (2) is larger than the number
 * of available GPUs (1) in this node"); fewer leave GPUs idle and hang the rendezvous of a node
 * that gets no rank.
 */
export function ranksFillGpus(recipe: Recipe, layout: LaunchLayout, pp: number): LaunchProblem | undefined {
  const gpus = layout.nodes * layout.gpusPerNode;
  const ranks = recipe.tp * pp;
  if (ranks === gpus) return undefined;
  const each = layout.gpusPerNode === 1 ? msg("spec.gpus.one") : msg("spec.gpus.each", { count: layout.gpusPerNode });
  const made =
    pp === 1
      ? msg("spec.gpus.tp", { tp: recipe.tp, count: ranks })
      : msg("spec.gpus.tpPp", { tp: recipe.tp, pp, count: ranks });
  const shape = msg("spec.gpus.shape", { nodes: msg("spec.count.nodes", { count: layout.nodes }), each });
  const whose = layout.deployment ?? msg("spec.gpus.theDeployment");
  const args = { made, whose, gpus: msg("spec.count.gpus", { count: gpus }), shape, ranks };
  const problem = msg(ranks > gpus ? "spec.gpus.tooMany" : "spec.gpus.tooFew", args);
  const tp = gpus % pp === 0 ? msg("spec.gpus.setTp", { tp: gpus / pp, file: recipe.file }) : undefined;
  const nodes = ranks / layout.gpusPerNode;
  const list = Number.isInteger(nodes)
    ? msg("spec.gpus.listNodes", { nodes: msg("spec.count.nodes", { count: nodes }) })
    : undefined;
  const fix =
    tp !== undefined && list !== undefined
      ? msg("spec.or", { a: tp, b: list })
      : (tp ?? list ?? msg("spec.gpus.equal", { gpus }));
  return { problem, fix, field: ["tp"] };
}
