import { msg } from "../text/messages";
import { ownedFlagsAsWritten } from "./args";
import type { EngineDriver } from "./driver";
import { vllm } from "./vllm";
import { modelNeeded, noDgppBlock, servedOnFixedPort } from "./rules";
import { engineDefault, readinessLen, withDefined, type FitKnobs, type KnobSource } from "./memory";

/** gr8 takes none of the fit's settings: its budget is fixed. */
function gr8Knobs(src: KnobSource): FitKnobs {
  const fixed = engineDefault(0.9);
  const kvDtype = engineDefault("auto");
  return { ...withDefined("maxModelLen", readinessLen(src)), util: fixed, kvDtype, tp: src.recipe?.tp ?? 1, pp: 1 };
}

/** gr8 (kindlingai/gr8): per-node containers; rank 0 (the first peer) serves the API on :8100. */
export const gr8: EngineDriver = {
  name: "gr8",
  shape: "per-node",
  modelArgs: (recipe) => (recipe.model === undefined ? [] : ["--model", recipe.model]),
  parallelArgs: () => [],
  distributedArgs: (ctx) => ["--tp", String(ctx.recipe.tp), "--peers", ctx.peers.join(",")],
  engineEnv: () => ({}),
  // No key: gr8's source is not public, its glm53 entrypoint takes no key option, and kindlingai's
  // published stack of the same `glm53 up` (glm-5.3-flash-gx10: image/entrypoint.sh, KNOBS.md)
  // starts vLLM with no --api-key, bound to 0.0.0.0. sm121 cannot make it ask for one
  // (docs/security.md, "Engines that take no key").
  apiKey: "none",
  apiKeyArgs: () => [],
  takesHostPort: false,
  hostPortOnAllNodes: false,
  apiPort: () => 8100,
  entrypointDefault: () => ["/opt/gr8/gr8", "glm53", "up"],
  recipeProblems: (r) => [
    ...servedOnFixedPort("gr8", msg("spec.rules.gr8Port"), r),
    ...noDgppBlock("gr8", r),
    ...modelNeeded(r),
    ...(r.deploy === "docker"
      ? []
      : [{ field: ["deploy"], problem: msg("spec.gr8.docker", { deploy: r.deploy }), fix: msg("spec.gr8.dockerFix") }]),
  ],
  checkArgs: ownedFlagsAsWritten,
  launchProblem: (recipe, { nodes: n }) => {
    if (recipe.tp === n) return undefined;
    const problem = msg("spec.gr8.ranks", { tp: recipe.tp, file: recipe.file, nodes: n });
    return { problem, fix: msg("spec.gr8.ranksFix", { tp: recipe.tp, nodes: n }), field: ["tp"] };
  },
  startFiles: () => [],
  kvCachePattern: undefined,
  // gr8's own source is not public; kindlingai's published GLM-5.3 stack (glm-5.3-flash-gx10,
  // the same `glm53 up`) is vLLM, which serves its /metrics beside the API on the head.
  metrics: vllm.metrics,
  installHint: msg("install.gr8"),
  memory: {
    utilName: msg("state.fit.gr8Budget"),
    utilDefault: 0.9,
    overheadGiB: 4,
    overheadInBudget: true,
    knobs: gr8Knobs,
  },
};
