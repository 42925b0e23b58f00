import { msg } from "../text/messages";
import { ownedFlagsAsWritten } from "../engines/args";
import type { EngineDriver } from "../engines/driver";
import { servedOnFixedPort, type FieldProblem, type RecipeFields } from "../engines/rules";
import {
  engineDefault,
  positive,
  readinessLen,
  setting,
  sourced,
  withDefined,
  type FitKnobs,
  type KnobSource,
} from "../engines/memory";

/** DGPP's fit knobs from the recipe's `[dgpp.engine]` table; every launch node holds a share of the weights. */
function dgppKnobs(src: KnobSource): FitKnobs {
  const e = src.recipe?.dgpp?.engine ?? {};
  const str = (k: string) => (typeof e[k] === "number" || typeof e[k] === "string" ? String(e[k]) : undefined);
  const at = (k: string) => `[dgpp.engine] ${k}`;
  const util = sourced(positive(str("gpu_memory_utilization")), at("gpu_memory_utilization"));
  return {
    ...withDefined("maxModelLen", sourced(positive(str("max_model_len")), at("max_model_len")) ?? readinessLen(src)),
    ...withDefined("maxNumSeqs", sourced(positive(str("max_num_seqs")), at("max_num_seqs"))),
    util: util ?? engineDefault(0.9),
    kvDtype: sourced(str("kv_cache_dtype"), at("kv_cache_dtype")) ?? engineDefault("auto"),
    tp: src.nodes,
    pp: 1,
  };
}

function dgppRecipeProblems(r: RecipeFields): FieldProblem[] {
  const out = servedOnFixedPort("dgpp", "[dgpp].http_port", r);
  if (r.deploy !== "native")
    out.push({
      field: ["deploy"],
      problem: msg("spec.dgpp.native", { deploy: r.deploy }),
      fix: msg("spec.dgpp.nativeFix"),
    });
  if (r.dgpp === undefined)
    out.push({ field: ["dgpp"], problem: msg("spec.dgpp.block"), fix: msg("spec.dgpp.blockFix") });
  if (r.dgpp !== undefined && (r.dgpp.repo === undefined) !== (r.dgpp.rev === undefined)) {
    out.push({
      field: ["dgpp", r.dgpp.repo === undefined ? "rev" : "repo"],
      problem: msg("spec.dgpp.repoRev"),
      fix: msg("spec.dgpp.repoRevFix"),
    });
  }
  return out;
}

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
  engineEnv: () => ({}),
  // No key: "The service has no TLS or authentication" (HawkBearPig/dgpp docs/operations.md), and
  // its deployment JSON's `http` takes only bind_host, port and max_body_bytes
  // (scripts/site_env.py, src/serve/cluster_config.cpp). It binds 127.0.0.1 unless told otherwise.
  apiKey: "none",
  apiKeyArgs: () => [],
  takesHostPort: false,
  hostPortOnAllNodes: false,
  apiPort: (recipe) => recipe.dgpp?.httpPort ?? 18080,
  entrypointDefault: () => ["scripts/dgpp-cluster", "up"],
  recipeProblems: dgppRecipeProblems,
  checkArgs: ownedFlagsAsWritten,
  launchProblem: () => undefined,
  startFiles: () => [],
  kvCachePattern: undefined,
  // DGPP's /metrics and /v1/metrics answer JSON, not Prometheus' text format
  // (HawkBearPig/dgpp docs/openai-compatibility.md, "Metrics and prefill progress").
  metrics: undefined,
  installHint: msg("install.dgpp"),
  memory: {
    utilName: setting("gpu_memory_utilization"),
    utilDefault: 0.9,
    overheadGiB: 4,
    overheadInBudget: true,
    knobs: dgppKnobs,
  },
};
