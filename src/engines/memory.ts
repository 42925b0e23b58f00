/**
 * What the memory fit needs of an engine, as its driver knows it: the setting that bounds the
 * memory it takes (name and default), its overhead beside weights and KV cache, and the fit knobs
 * read the way the engine reads them (EngineDriver.memory). The shared types and readers live
 * here; each driver says which of its own options they are.
 */
import type { Recipe } from "../recipe/types";
import { msg, type Msg } from "../text/messages";

/**
 * A value and where it came from (`--max-model-len`, `MAX_NUM_SEQS`, `the engine's default`): a
 * message, so that the words among them are said in the reader's language where the fit is printed.
 */
export interface Sourced<T> {
  value: T;
  from: Msg;
  /** Nothing the operator wrote set it: the engine's own default (the fix names the setting instead). */
  byDefault?: true;
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

/** What a driver reads its knobs from: the recipe, and for a script recipe its profile's keys. */
export interface KnobSource {
  recipe?: Recipe;
  /** A script recipe's rendered .env keys (MAX_MODEL_LEN, EXTRA_VLLM_ARGS, ...). */
  keys?: Readonly<Record<string, string>>;
  /** The deployment's launch nodes. */
  nodes: number;
  /** readiness.max_model_len: the context length when the engine's own settings name none. */
  readinessMaxLen?: number;
}

export interface EngineMemory {
  /** The setting that bounds the engine's memory, as the operator raises it (a message: gr8 names its own budget). */
  utilName: Msg;
  utilDefault: number;
  /** GiB the engine takes beside weights and KV cache: activations, CUDA graphs, NCCL and cuBLAS buffers. */
  overheadGiB: number;
  /**
   * Whether the utilization covers everything the engine allocates (vLLM: weights, KV cache,
   * activations, CUDA graphs) or only weights and the KV pool (SGLang's mem_fraction_static).
   */
  overheadInBudget: boolean;
  /** The knobs of a deployment, read the way the engine reads them. */
  knobs(src: KnobSource): FitKnobs;
}

/** The engine's default `value`; `about`: the default is not a fixed number (SGLang sizes it by the GPU). */
export function engineDefault<T>(value: T, about = false): Sourced<T> {
  return { value, from: msg(about ? "state.fit.defaultAbout" : "state.fit.default"), byDefault: true };
}

/** A setting as a source: its name (a flag, a key, a config field), the same in every language. */
export function setting(name: string): Msg {
  return msg("state.fit.setting", { name });
}

export function positive(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v.replace(/^"|"$/g, ""));
  return Number.isFinite(n) && n > 0 ? n : undefined;
}

export function sourced<T>(value: T | undefined, from: string | Msg): Sourced<T> | undefined {
  return value === undefined ? undefined : { value, from: typeof from === "string" ? setting(from) : from };
}

export function withDefined<K extends string, T>(key: K, v: T | undefined): Partial<Record<K, T>> {
  return v === undefined ? {} : ({ [key]: v } as Record<K, T>);
}

/** readiness.max_model_len, as a knob's source. */
export function readinessLen(src: KnobSource): Sourced<number> | undefined {
  return sourced(src.readinessMaxLen, "readiness.max_model_len");
}
