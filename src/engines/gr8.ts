import type { EngineDriver } from "./driver";

/** gr8 (kindlingai/gr8): per-node containers; rank 0 (the first peer) serves the API on :8100. */
export const gr8: EngineDriver = {
  name: "gr8",
  shape: "per-node",
  modelArgs: (recipe) => (recipe.model === undefined ? [] : ["--model", recipe.model]),
  parallelArgs: () => [],
  distributedArgs: (ctx) => ["--tp", String(ctx.recipe.tp), "--peers", ctx.peers.join(",")],
  headlessWorkers: false,
  engineIpEnv: undefined,
  takesHostPort: false,
  hostPortOnAllNodes: false,
  apiPort: () => 8100,
  entrypointDefault: () => ["/opt/gr8/gr8", "glm53", "up"],
  kvCachePattern: undefined,
  installHint: "docker pull ghcr.io/kindlingai/gr8 on every node",
};
