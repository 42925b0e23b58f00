/**
 * The engine settings the memory fit depends on, read the way each engine reads them: the
 * context length, the concurrent sequences, the fraction of the node's memory the engine may
 * take, the KV cache dtype and pipeline parallelism. vLLM and SGLang read their recipe `args`
 * through their own option tables (any spelling), a script recipe its profile's keys (and
 * EXTRA_VLLM_ARGS), DGPP its `[dgpp.engine]` table; gr8 takes none of them.
 */
import { optionValues } from "../engines/options/values";
import { SGLANG_OPTIONS, VLLM_OPTIONS } from "../engines/options/table";
import type { EngineName, Recipe } from "../recipe/types";
import type { DeploymentBundle } from "./types";

/** A value and where it came from (`--max-model-len`, `MAX_NUM_SEQS`, `the engine's default`). */
export interface Sourced<T> {
  value: T;
  from: string;
}

export interface FitKnobs {
  maxModelLen?: Sourced<number>;
  /** Unset: the engine admits what its KV cache holds; the fit then asks for one full sequence. */
  maxNumSeqs?: Sourced<number>;
  util: Sourced<number>;
  kvDtype: Sourced<string>;
  /** How many nodes share the weights: tensor parallel x pipeline parallel. */
  tp: number;
  pp: number;
}

interface EngineFit {
  utilName: string;
  utilDefault: number;
  /** GiB the engine takes beside weights and KV cache: activations at the batch-token limit, CUDA graphs, NCCL and cuBLAS buffers. */
  overheadGiB: number;
  /**
   * vLLM's utilization covers everything the engine allocates (weights, KV cache, activations,
   * CUDA graphs); SGLang's mem_fraction_static only weights and the KV pool, the rest of the
   * memory holds its activations.
   */
  overheadInBudget: boolean;
}

/** Per engine: its utilization setting and its default (SGLang computes its own from the GPU's memory; 0.88 is near what it picks on a 128 GB device). */
export const ENGINE_FIT = {
  vllm: { utilName: "--gpu-memory-utilization", utilDefault: 0.9, overheadGiB: 4, overheadInBudget: true },
  sglang: { utilName: "--mem-fraction-static", utilDefault: 0.88, overheadGiB: 4, overheadInBudget: false },
  gr8: { utilName: "gr8's fixed budget", utilDefault: 0.9, overheadGiB: 4, overheadInBudget: true },
  dgpp: { utilName: "gpu_memory_utilization", utilDefault: 0.9, overheadGiB: 4, overheadInBudget: true },
} satisfies Record<EngineName, EngineFit>;

const DEFAULT = "the engine's default";

function positive(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v.replace(/^"|"$/g, ""));
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

function sourced<T>(value: T | undefined, from: string): Sourced<T> | undefined {
  return value === undefined ? undefined : { value, from };
}

/** vLLM's flags from a value map (options by dest), with the names they are shown by. */
function vllmKnobs(v: ReadonlyMap<string, string>, keys: Readonly<Record<string, string>>, tp: number): FitKnobs {
  const fromKey = (key: string, dest: string, flag: string): Sourced<string> | undefined =>
    v.has(dest) ? { value: v.get(dest) ?? "", from: flag } : keys[key] !== undefined && keys[key] !== "" ? { value: keys[key] ?? "", from: key } : undefined;
  const num = (key: string, dest: string, flag: string) => {
    const s = fromKey(key, dest, flag);
    return s === undefined ? undefined : sourced(positive(s.value), s.from);
  };
  const kv = fromKey("KV_CACHE_DTYPE", "kv_cache_dtype", "--kv-cache-dtype");
  return {
    ...withDefined("maxModelLen", num("MAX_MODEL_LEN", "max_model_len", "--max-model-len")),
    ...withDefined("maxNumSeqs", num("MAX_NUM_SEQS", "max_num_seqs", "--max-num-seqs")),
    util: num("GPU_MEMORY_UTILIZATION", "gpu_memory_utilization", "--gpu-memory-utilization") ?? { value: ENGINE_FIT.vllm.utilDefault, from: DEFAULT },
    kvDtype: kv ?? { value: "auto", from: DEFAULT },
    tp,
    pp: positive(v.get("pipeline_parallel_size")) ?? 1,
  };
}

function withDefined<K extends string, T>(key: K, v: T | undefined): Partial<Record<K, T>> {
  return v === undefined ? {} : ({ [key]: v } as Record<K, T>);
}

/** The knobs of a deployment as rendered, from its recipe (and, for a script recipe, its profile's keys). */
export function knobsOf(b: DeploymentBundle, recipe: Recipe | undefined): FitKnobs {
  const readiness = sourced(b.readiness.maxModelLen, "readiness.max_model_len");
  const tp = recipe?.tp ?? 1;
  switch (b.engine) {
    case "vllm": {
      if (b.deploy === "script") {
        const keys = b.nodes[0]?.envKeys ?? {};
        const extra = (keys["EXTRA_VLLM_ARGS"] ?? "").split(/\s+/).filter((s) => s !== "");
        const k = vllmKnobs(optionValues(VLLM_OPTIONS, extra), keys, b.nodes.length);
        return { ...k, ...(k.maxModelLen === undefined && readiness !== undefined && { maxModelLen: readiness }) };
      }
      const k = vllmKnobs(optionValues(VLLM_OPTIONS, recipe?.args ?? []), {}, tp);
      return { ...k, ...(k.maxModelLen === undefined && readiness !== undefined && { maxModelLen: readiness }) };
    }
    case "sglang": {
      const v = optionValues(SGLANG_OPTIONS, recipe?.args ?? []);
      const len = sourced(positive(v.get("context_length")), "--context-length") ?? readiness;
      const seqs = sourced(positive(v.get("max_running_requests")), "--max-running-requests");
      return {
        ...withDefined("maxModelLen", len),
        ...withDefined("maxNumSeqs", seqs),
        util: sourced(positive(v.get("mem_fraction_static")), "--mem-fraction-static") ?? { value: ENGINE_FIT.sglang.utilDefault, from: `${DEFAULT} (about)` },
        kvDtype: sourced(v.get("kv_cache_dtype"), "--kv-cache-dtype") ?? { value: "auto", from: DEFAULT },
        tp,
        pp: positive(v.get("pp_size")) ?? 1,
      };
    }
    case "dgpp": {
      const e = recipe?.dgpp?.engine ?? {};
      const str = (k: string) => (typeof e[k] === "number" || typeof e[k] === "string" ? String(e[k]) : undefined);
      const at = (k: string) => `[dgpp.engine] ${k}`;
      return {
        ...withDefined("maxModelLen", sourced(positive(str("max_model_len")), at("max_model_len")) ?? readiness),
        ...withDefined("maxNumSeqs", sourced(positive(str("max_num_seqs")), at("max_num_seqs"))),
        util: sourced(positive(str("gpu_memory_utilization")), at("gpu_memory_utilization")) ?? { value: ENGINE_FIT.dgpp.utilDefault, from: DEFAULT },
        kvDtype: sourced(str("kv_cache_dtype"), at("kv_cache_dtype")) ?? { value: "auto", from: DEFAULT },
        tp: b.nodes.length,
        pp: 1,
      };
    }
    case "gr8":
      return { ...withDefined("maxModelLen", readiness), util: { value: ENGINE_FIT.gr8.utilDefault, from: DEFAULT }, kvDtype: { value: "auto", from: DEFAULT }, tp, pp: 1 };
  }
}
