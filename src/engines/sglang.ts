import type { EngineDriver } from "./driver";
import { rendezvousPort } from "./driver";

export const sglang: EngineDriver = {
  name: "sglang",
  shape: "per-node",
  modelArgs: (recipe) => (recipe.model === undefined ? [] : ["--model-path", recipe.model]),
  parallelArgs(recipe) {
    const served = recipe.servedModelName === undefined ? [] : ["--served-model-name", recipe.servedModelName];
    return [...served, "--tp", String(recipe.tp)];
  },
  distributedArgs(ctx) {
    if (ctx.nnodes <= 1) return [];
    const head = ctx.peers[0] ?? ctx.bindHost;
    return ["--nnodes", String(ctx.nnodes), "--node-rank", String(ctx.rank), "--dist-init-addr", `${head}:${rendezvousPort(ctx.port)}`];
  },
  headlessWorkers: false,
  engineIpEnv: "SGLANG_WORKER_IP",
  takesHostPort: true,
  hostPortOnAllNodes: true,
  apiPort: (recipe) => recipe.port ?? 30000,
  entrypointDefault: () => ["python3", "-m", "sglang.launch_server"],
  kvCachePattern: "KV Cache is allocated\\. #tokens: ([0-9,]+)",
  installHint: 'pip install "sglang[all]" (or run the lmsysorg/sglang image with deploy = "docker")',
};
