import { ownedFlagsAsWritten } from "./args";
import type { EngineDriver } from "./driver";
import { servedOnFixedPort, type FieldProblem, type RecipeFields } from "./rules";

function dgppRecipeProblems(r: RecipeFields): FieldProblem[] {
  const out = servedOnFixedPort("dgpp", "[dgpp].http_port", r);
  if (r.deploy !== "native") out.push({ field: ["deploy"], problem: `dgpp is head-coordinated and runs as deploy = "native", not "${r.deploy}"`, fix: 'set deploy = "native"' });
  if (r.dgpp === undefined) out.push({ field: ["dgpp"], problem: "a dgpp recipe needs a [dgpp] block", fix: "add [dgpp] with dir (and repo + rev to provision)" });
  if (r.dgpp !== undefined && (r.dgpp.repo === undefined) !== (r.dgpp.rev === undefined)) {
    out.push({ field: ["dgpp", r.dgpp.repo === undefined ? "rev" : "repo"], problem: "repo and rev go together", fix: "set both to provision DGPP, or neither when it is pre-installed" });
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
  installHint: "clone DGPP into [dgpp].dir on every node, or set [dgpp].repo and rev so sm121 provisions it",
};
