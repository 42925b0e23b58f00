import type { EngineDriver } from "./driver";
import { rendezvousPort } from "./driver";

export const vllm: EngineDriver = {
  name: "vllm",
  shape: "per-node",
  modelArgs(recipe, entrypoint) {
    if (recipe.model === undefined) return [];
    // `vllm serve MODEL` takes it positionally; the older api_server module takes --model.
    return entrypoint[entrypoint.length - 1] === "serve" ? [recipe.model] : ["--model", recipe.model];
  },
  parallelArgs(recipe) {
    const served = recipe.servedModelName === undefined ? [] : ["--served-model-name", recipe.servedModelName];
    return [...served, "--tensor-parallel-size", String(recipe.tp)];
  },
  distributedArgs(ctx) {
    if (ctx.nnodes <= 1) return [];
    const head = ctx.peers[0] ?? ctx.bindHost;
    const flags = ["--nnodes", String(ctx.nnodes), "--node-rank", String(ctx.rank), "--master-addr", head, "--master-port", String(rendezvousPort(ctx.port))];
    return ctx.rank > 0 ? [...flags, "--headless"] : flags;
  },
  headlessWorkers: true,
  engineIpEnv: "VLLM_HOST_IP",
  takesHostPort: true,
  hostPortOnAllNodes: false,
  apiPort: (recipe) => recipe.port ?? 8000,
  entrypointDefault: () => ["vllm", "serve"],
  kvCachePattern: "GPU KV cache size: ([0-9,]+) tokens",
  installHint: "pip install vllm (or run the NGC image nvcr.io/nvidia/vllm with deploy = \"docker\")",
};
