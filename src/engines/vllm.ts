import type { EngineDriver } from "./driver";
import { collectivesEnv, tpSpansNodes } from "./driver";
import { checkArgs, type Owned } from "./options/check";
import { VLLM_OPTIONS, type OptionSpec } from "./options/table";
import { servedOnRecipePort } from "./rules";
import { rendezvousArgs, servedAndTp } from "./torchServer";

/** `vllm serve`'s options that sm121 derives, by dest, with what to set instead. */
const OWNED: Readonly<Record<string, string>> = {
  model: "set `model` instead",
  served_model_name: "set `served_model_name` instead",
  host: "sm121 sets it from the node's BIND/ip",
  port: "set `port` instead",
  tensor_parallel_size: "set `tp` instead",
  nnodes: "sm121 derives it from the deployment's nodes",
  node_rank: "sm121 derives it from the deployment's nodes",
  master_addr: "sm121 derives it from rank 0's ip",
  master_port: "sm121 derives it from `port`",
  headless: "sm121 adds it on vLLM ranks above 0",
  api_key: "put API_KEY in the node .env or a Pulumi secret; a flag would show it in argv",
};

const LAYOUT = "sm121 runs one tensor-parallel group across the deployment's nodes, with the API on rank 0; data parallelism would change that layout";

function owned(o: OptionSpec): Owned | undefined {
  if (Object.hasOwn(OWNED, o.dest)) return { why: OWNED[o.dest] ?? "" };
  if (o.dest.startsWith("data_parallel")) return { why: LAYOUT };
  // sm121's multi-node launch (--nnodes/--node-rank/--master-addr, one process per node) is the
  // multiprocessing executor's; ray or an external launcher would need a cluster sm121 does not start.
  if (o.dest === "distributed_executor_backend") return { why: "sm121's multi-node launch works with the mp backend only", unless: ["mp"] };
  return undefined;
}

/** `vllm serve MODEL` takes it positionally; the older api_server module takes --model. */
const isServe = (entrypoint: readonly string[]): boolean => entrypoint[entrypoint.length - 1] === "serve";

export const vllm: EngineDriver = {
  name: "vllm",
  shape: "per-node",
  modelArgs(recipe, entrypoint) {
    if (recipe.model === undefined) return [];
    return isServe(entrypoint) ? [recipe.model] : ["--model", recipe.model];
  },
  parallelArgs: (recipe) => servedAndTp(recipe, "--tensor-parallel-size"),
  distributedArgs(ctx) {
    const flags = rendezvousArgs(ctx, (head, port) => ["--master-addr", head, "--master-port", String(port)]);
    return ctx.rank > 0 ? [...flags, "--headless"] : flags;
  },
  // vLLM binds its collectives to VLLM_HOST_IP (vllm/envs.py).
  engineEnv: (recipe, ip) => ({ VLLM_HOST_IP: ip, ...collectivesEnv(recipe) }),
  apiKey: "env",
  apiKeyArgs: () => [],
  takesHostPort: true,
  hostPortOnAllNodes: false,
  apiPort: (recipe) => recipe.port ?? 8000,
  entrypointDefault: () => ["vllm", "serve"],
  recipeProblems: (r) => servedOnRecipePort("vllm", r),
  checkArgs: (args) => checkArgs({ table: VLLM_OPTIONS, owned }, args),
  launchProblem(recipe, n) {
    const entry = recipe.entrypoint ?? vllm.entrypointDefault();
    // python3 -m vllm.entrypoints.openai.api_server parses --headless and ignores it: every
    // worker rank would start a second API server instead of joining rank 0's engine.
    if (n > 1 && !isServe(entry)) {
      return { problem: `vLLM's entrypoint ${JSON.stringify(entry.join(" "))} (${recipe.file}) runs an API server on every rank; it ignores --headless, so the ${n - 1} worker rank(s) would not join rank 0`, fix: 'remove entrypoint (sm121 runs `vllm serve`), or set entrypoint = ["vllm", "serve"], or serve this recipe on one node' };
    }
    return tpSpansNodes(recipe, n);
  },
  kvCachePattern: "GPU KV cache size: ([0-9,]+) tokens",
  // The API server always mounts /metrics; the engine's series are there unless --disable-log-stats
  // (vllm/entrypoints/serve/instrumentator/metrics.py, vllm/v1/metrics/loggers.py).
  metrics: {
    flags: [],
    path: "/metrics",
    series: {
      running: "vllm:num_requests_running",
      waiting: "vllm:num_requests_waiting",
      kvUsage: "vllm:kv_cache_usage_perc",
      promptTokens: "vllm:prompt_tokens_total",
      generationTokens: "vllm:generation_tokens_total",
      requests: "vllm:request_success_total",
      ttft: "vllm:time_to_first_token_seconds",
      itl: "vllm:inter_token_latency_seconds",
      e2e: "vllm:e2e_request_latency_seconds",
    },
  },
  installHint: "pip install vllm (or run the NGC image nvcr.io/nvidia/vllm with deploy = \"docker\")",
};
