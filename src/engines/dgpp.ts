import type { EngineDriver } from "./driver";

/**
 * DGPP (HawkBearPig/dgpp): head-coordinated. Rank 0 runs `scripts/dgpp-cluster up`, which brings
 * up the peers itself; the generated cluster JSON carries model, world size and rendezvous.
 */
export const dgpp: EngineDriver = {
  name: "dgpp",
  shape: "head-coordinated",
  modelArgs: () => [],
  parallelArgs: () => [],
  distributedArgs: () => [],
  headlessWorkers: false,
  engineIpEnv: undefined,
  takesHostPort: false,
  hostPortOnAllNodes: false,
  apiPort: (recipe) => recipe.dgpp?.httpPort ?? 18080,
  entrypointDefault: () => ["scripts/dgpp-cluster", "up"],
  kvCachePattern: undefined,
  installHint: "clone DGPP into [dgpp].dir on every node, or set [dgpp].repo and rev so sm121 provisions it",
};
