import { msg, type Msg } from "../text/messages";
import type { EngineDriver } from "./driver";
import { ranksFillGpus } from "./driver";
import { checkArgs, type Owned } from "./options/check";
import { SGLANG_OPTIONS, type OptionSpec } from "./options/table";
import { optionAt, optionValues } from "./options/values";
import {
  engineDefault,
  positive,
  readinessLen,
  setting,
  sourced,
  withDefined,
  type FitKnobs,
  type KnobSource,
} from "./memory";
import { servedOnRecipePort } from "./rules";
import { rendezvousArgs, servedAndTp } from "./torchServer";

/** SGLang's server options that sm121 derives, by dest, with what to set instead. */
const OWNED: Readonly<Record<string, Msg>> = {
  model_path: msg("spec.why.model"),
  served_model_name: msg("spec.why.served"),
  host: msg("spec.why.host"),
  port: msg("spec.why.port"),
  tp_size: msg("spec.why.tp"),
  nnodes: msg("spec.why.nodes"),
  node_rank: msg("spec.why.nodes"),
  dist_init_addr: msg("spec.why.distInit"),
  api_key: msg("spec.why.apiKey"),
  config: msg("spec.why.config"),
  dp_size: msg("spec.why.dpSglang"),
};

const owned = (o: OptionSpec): Owned | undefined =>
  Object.hasOwn(OWNED, o.dest) ? { why: OWNED[o.dest] ?? msg("spec.why.model") } : undefined;

/** SGLang computes its own mem_fraction_static from the GPU's memory; 0.88 is near what it picks on a 128 GB device. */
const UTIL_DEFAULT = 0.88;

/** SGLang's fit knobs from the recipe's args, as its parser reads them. */
function sglangKnobs(src: KnobSource): FitKnobs {
  const v = optionValues(SGLANG_OPTIONS, src.recipe?.args ?? []);
  const util = sourced(positive(v.get("mem_fraction_static")), "--mem-fraction-static");
  return {
    ...withDefined("maxModelLen", sourced(positive(v.get("context_length")), "--context-length") ?? readinessLen(src)),
    ...withDefined("maxNumSeqs", sourced(positive(v.get("max_running_requests")), "--max-running-requests")),
    util: util ?? engineDefault(UTIL_DEFAULT, true),
    kvDtype: sourced(v.get("kv_cache_dtype"), "--kv-cache-dtype") ?? engineDefault("auto"),
    tp: src.recipe?.tp ?? 1,
    pp: positive(v.get("pp_size")) ?? 1,
  };
}

export const sglang: EngineDriver = {
  name: "sglang",
  shape: "per-node",
  modelArgs: (recipe) => (recipe.model === undefined ? [] : ["--model-path", recipe.model]),
  // The option's own name: `--tp` works only as an abbreviation, which a new option could break.
  parallelArgs: (recipe) => servedAndTp(recipe, "--tp-size"),
  distributedArgs: (ctx) => rendezvousArgs(ctx, (head, port) => ["--dist-init-addr", `${head}:${port}`]),
  // SGLang reads its own address from SGLANG_HOST_IP (or HOST_IP; sglang/srt/utils/network.py);
  // SGLANG_WORKER_IP is what seed 000's launcher set, kept for scripts that still read it.
  engineEnv: (_recipe, ip) => ({ SGLANG_HOST_IP: ip, SGLANG_WORKER_IP: ip }),
  apiKey: "key-file",
  // prepare_server_args merges a --config YAML in front of argv (command-line flags win).
  apiKeyArgs: (keyFile) => ["--config", keyFile],
  takesHostPort: true,
  hostPortOnAllNodes: true,
  apiPort: (recipe) => recipe.port ?? 30000,
  entrypointDefault: () => ["python3", "-m", "sglang.launch_server"],
  recipeProblems: (r) => servedOnRecipePort("sglang", r),
  checkArgs: (args, table) => checkArgs({ table: table ?? SGLANG_OPTIONS, owned }, args),
  launchProblem(recipe, layout) {
    const pp = Number(optionAt(layout.table ?? SGLANG_OPTIONS, recipe.args, "pp_size")?.value ?? "1");
    return ranksFillGpus(recipe, layout, Number.isInteger(pp) && pp > 0 ? pp : 1);
  },
  startFiles: () => [],
  kvCachePattern: "KV Cache is allocated\\. #tokens: ([0-9,]+)",
  // Without --enable-metrics SGLang registers no collector; with it, node rank 0's HTTP server
  // serves /metrics (sglang/srt/entrypoints/http_server.py; other ranks run no HTTP server).
  metrics: {
    flags: ["--enable-metrics"],
    path: "/metrics",
    series: {
      running: "sglang:num_running_reqs",
      waiting: "sglang:num_queue_reqs",
      kvUsage: "sglang:token_usage",
      promptTokens: "sglang:prompt_tokens_total",
      generationTokens: "sglang:generation_tokens_total",
      requests: "sglang:num_requests_total",
      ttft: "sglang:time_to_first_token_seconds",
      itl: "sglang:inter_token_latency_seconds",
      e2e: "sglang:e2e_request_latency_seconds",
    },
  },
  installHint: msg("install.sglang"),
  // mem_fraction_static covers weights and the KV pool; the rest of the memory holds its activations.
  memory: {
    utilName: setting("--mem-fraction-static"),
    utilDefault: UTIL_DEFAULT,
    overheadGiB: 4,
    overheadInBudget: false,
    knobs: sglangKnobs,
  },
};
