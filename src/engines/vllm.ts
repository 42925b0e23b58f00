import type { Recipe } from "../recipe/types";
import { msg, type Msg } from "../text/messages";
import type { EngineDriver, LaunchLayout, LaunchProblem } from "./driver";
import { ranksFillGpus } from "./driver";
import { checkArgs, type Owned } from "./options/check";
import { ENGINE_TABLES, VLLM_OPTIONS, type OptionSpec, type OptionTable } from "./options/table";
import { optionAt, optionValues } from "./options/values";
import { engineDefault, positive, readinessLen, setting, sourced, withDefined } from "./memory";
import type { FitKnobs, KnobSource, Sourced } from "./memory";
import { servedOnRecipePort } from "./rules";
import { rendezvousArgs, servedAndTp } from "./torchServer";

/** `vllm serve`'s options that sm121 derives, by dest, with what to set instead. */
const OWNED: Readonly<Record<string, Msg>> = {
  model: msg("spec.why.model"),
  served_model_name: msg("spec.why.served"),
  host: msg("spec.why.host"),
  port: msg("spec.why.port"),
  tensor_parallel_size: msg("spec.why.tp"),
  nnodes: msg("spec.why.nodes"),
  node_rank: msg("spec.why.nodes"),
  master_addr: msg("spec.why.rank0"),
  master_port: msg("spec.why.masterPort"),
  headless: msg("spec.why.headless"),
  api_key: msg("spec.why.apiKey"),
};

const LAYOUT = msg("spec.why.dpVllm");

function owned(o: OptionSpec): Owned | undefined {
  const why = Object.hasOwn(OWNED, o.dest) ? OWNED[o.dest] : undefined;
  if (why !== undefined) return { why };
  if (o.dest.startsWith("data_parallel")) return { why: LAYOUT };
  // sm121's multi-node launch (--nnodes/--node-rank/--master-addr, one process per node) is the
  // multiprocessing executor's; ray or an external launcher would need a cluster sm121 does not start.
  if (o.dest === "distributed_executor_backend") return { why: msg("spec.why.mp"), unless: ["mp"] };
  return undefined;
}

/**
 * vLLM's own refusals at start that sm121 can see at plan time (vllm/entrypoints/cli/serve.py and
 * FlexibleArgumentParser, recorded from the real code by scripts/engine-options/starts.py):
 * - a headless rank (every rank above 0 of a deployment of several nodes) starts no API server:
 *   `--api-server-count` set there stops it, any value above 0 from vLLM 0.11.1 on, above 1 before;
 * - `--config FILE` (that exact word) is read while the arguments are parsed: it must be a
 *   .yaml/.yml file (the node-side check that it exists is render's).
 */
function startProblems(recipe: Recipe, layout: LaunchLayout, table: OptionTable): LaunchProblem | undefined {
  // sm121's multi-node launch is `vllm serve --nnodes N --node-rank R --master-addr A --master-port P`
  // (and --headless above rank 0): a vLLM whose parser has no --nnodes stops at "unrecognized arguments".
  const has = (dest: string) => table.options.some((o) => o.dest === dest);
  const missing = ["nnodes", "node_rank", "master_addr", "master_port"].filter((d) => !has(d));
  if (layout.nodes > 1 && missing.length > 0) {
    const newer = ENGINE_TABLES.vllm.filter((t) => t.options.some((o) => o.dest === "nnodes")).map((t) => t.version);
    const flags = missing.map((d) => `--${d.replace(/_/g, "-")}`).join(", ");
    const field = recipe.image === undefined ? "engine_version" : "image";
    return {
      problem: msg("spec.vllm.noMultiNode", { version: table.version, flags, nodes: layout.nodes }),
      fix: msg("spec.vllm.noMultiNodeFix", { version: newer[0] ?? "0.33.0", field, file: recipe.file }),
      field: [field],
    };
  }
  const count = optionAt(table, recipe.args, "api_server_count");
  const n = Number(count?.value);
  const limit = headlessApiServerLimit(table.version);
  if (layout.nodes > 1 && count !== undefined && Number.isInteger(n) && n > limit) {
    const said =
      limit === 0
        ? `--api-server-count=${count.value} cannot be used with --headless`
        : "api_server_count can't be set in headless mode";
    const headless = layout.nodes === 2 ? msg("spec.vllm.rank1") : msg("spec.vllm.ranks", { last: layout.nodes - 1 });
    return {
      problem: msg("spec.vllm.apiServers", { count: count.value, headless, version: table.version, said }),
      fix: msg(limit === 0 ? "spec.vllm.apiServersFix" : "spec.vllm.apiServersFix1"),
      field: ["args", count.index],
    };
  }
  const config = recipe.args.indexOf("--config");
  const file = config < 0 ? undefined : recipe.args[config + 1];
  if (file !== undefined && !/\.ya?ml$/.test(file)) {
    return {
      problem: msg("spec.vllm.config", { file }),
      fix: msg("spec.vllm.configFix"),
      field: ["args", config + 1],
    };
  }
  return undefined;
}

/**
 * The largest --api-server-count a headless rank takes: 1 up to vLLM 0.11.1 (run_headless refuses
 * more), none later (any explicit count is refused), as the recordings of the real vLLMs show.
 */
export function headlessApiServerLimit(version: string): number {
  const [major = 0, minor = 0] = version.split(".").map((x) => Number.parseInt(x, 10));
  return major > 0 || minor > 11 ? 0 : 1;
}

/** `vllm serve MODEL` takes it positionally; the older api_server module takes --model. */
const isServe = (entrypoint: readonly string[]): boolean => entrypoint[entrypoint.length - 1] === "serve";

/** vLLM's default --gpu-memory-utilization. */
const UTIL_DEFAULT = 0.9;

/**
 * vLLM's fit knobs from its flags as its parser reads them (any spelling), from the recipe's args;
 * a script recipe's from its profile's keys and EXTRA_VLLM_ARGS, the flag winning over the key.
 */
function vllmKnobs(src: KnobSource): FitKnobs {
  const keys = src.keys ?? {};
  const extra = (keys["EXTRA_VLLM_ARGS"] ?? "").split(/\s+/).filter((s) => s !== "");
  const v = optionValues(VLLM_OPTIONS, src.keys !== undefined ? extra : (src.recipe?.args ?? []));
  const fromKey = (key: string, dest: string, flag: string): Sourced<string> | undefined => {
    if (v.has(dest)) return { value: v.get(dest) ?? "", from: setting(flag) };
    const k = keys[key];
    return k !== undefined && k !== "" ? { value: k, from: setting(key) } : undefined;
  };
  const num = (key: string, dest: string, flag: string) => {
    const s = fromKey(key, dest, flag);
    return s === undefined ? undefined : sourced(positive(s.value), s.from);
  };
  const util = num("GPU_MEMORY_UTILIZATION", "gpu_memory_utilization", "--gpu-memory-utilization");
  return {
    ...withDefined("maxModelLen", num("MAX_MODEL_LEN", "max_model_len", "--max-model-len") ?? readinessLen(src)),
    ...withDefined("maxNumSeqs", num("MAX_NUM_SEQS", "max_num_seqs", "--max-num-seqs")),
    util: util ?? engineDefault(UTIL_DEFAULT),
    kvDtype: fromKey("KV_CACHE_DTYPE", "kv_cache_dtype", "--kv-cache-dtype") ?? engineDefault("auto"),
    // A script recipe's start.sh serves one node's share; an engine recipe says its tp.
    tp: src.keys !== undefined ? src.nodes : (src.recipe?.tp ?? 1),
    pp: positive(v.get("pipeline_parallel_size")) ?? 1,
  };
}

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
  engineEnv: (_recipe, ip) => ({ VLLM_HOST_IP: ip }),
  apiKey: "env",
  apiKeyArgs: () => [],
  takesHostPort: true,
  hostPortOnAllNodes: false,
  apiPort: (recipe) => recipe.port ?? 8000,
  entrypointDefault: () => ["vllm", "serve"],
  recipeProblems: (r) => servedOnRecipePort("vllm", r),
  checkArgs: (args, table) => checkArgs({ table: table ?? VLLM_OPTIONS, owned }, args),
  launchProblem(recipe, layout) {
    const n = layout.nodes;
    const entry = recipe.entrypoint ?? vllm.entrypointDefault();
    // python3 -m vllm.entrypoints.openai.api_server parses --headless and ignores it: every
    // worker rank would start a second API server instead of joining rank 0's engine.
    if (n > 1 && !isServe(entry)) {
      return {
        problem: msg("spec.vllm.entrypoint", {
          entry: JSON.stringify(entry.join(" ")),
          file: recipe.file,
          count: n - 1,
        }),
        fix: msg("spec.vllm.entrypointFix"),
        field: ["entrypoint"],
      };
    }
    const table = layout.table ?? VLLM_OPTIONS;
    const pp = Number(optionAt(table, recipe.args, "pipeline_parallel_size")?.value ?? "1");
    const ranks = Number.isInteger(pp) && pp > 0 ? pp : 1;
    return startProblems(recipe, layout, table) ?? ranksFillGpus(recipe, layout, ranks);
  },
  startFiles(recipe) {
    // FlexibleArgumentParser opens the file of `--config FILE` (that exact word; `--config=FILE`
    // is stored unread) while it parses: a missing file stops vLLM before anything else.
    const i = recipe.args.indexOf("--config");
    const file = i < 0 ? undefined : recipe.args[i + 1];
    if (file === undefined) return [];
    const why =
      `--config ${file} in args of ${recipe.file}: vLLM opens it while it parses its arguments ` +
      "and stops with FileNotFoundError without it";
    return [{ path: file, why }];
  },
  // vLLM names the KV cache's device: "GPU KV cache size" on a Spark, "CPU KV cache size" on its CPU
  // build (vllm/v1/core/kv_cache_utils.py, the device type upper-cased; "cuda" reads GPU).
  kvCachePattern: "[CG]PU KV cache size: ([0-9,]+) tokens",
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
  installHint: msg("install.vllm"),
  // The utilization covers everything vLLM allocates: weights, KV cache, activations, CUDA graphs.
  memory: {
    utilName: setting("--gpu-memory-utilization"),
    utilDefault: UTIL_DEFAULT,
    overheadGiB: 4,
    overheadInBudget: true,
    knobs: vllmKnobs,
  },
};
