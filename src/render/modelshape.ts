/**
 * What a model's config.json says about its memory: the dtype of its weights and the size of one
 * token's KV cache on one node. Read from the node's HF cache (or a recipe's `[memory]` block, in
 * the same names), the way the engines size their caches:
 *   - grouped-query (and multi-head) attention: K and V of `num_key_value_heads` heads of
 *     `head_dim` (else hidden_size / num_attention_heads) on every layer; tensor parallelism
 *     splits the heads, and a rank keeps at least one (vLLM replicates KV heads when tp exceeds
 *     them);
 *   - multi-head latent attention (DeepSeek-V2/V3 and the GLM models built on it): one latent of
 *     kv_lora_rank + qk_rope_head_dim per layer, which every tensor-parallel rank keeps whole;
 *   - pipeline parallelism splits the layers.
 * Every layer is taken as full attention: a model with sliding-window or linear-attention layers
 * needs less than this says.
 */

export type Attention = { kind: "gqa"; kvHeads: number; headDim: number } | { kind: "mla"; latent: number };

export interface ModelShape {
  /** config.json's torch_dtype (or dtype), when it names one. */
  dtype?: string;
  layers?: number;
  attention?: Attention;
  /** max_position_embeddings: the engines' default max_model_len. */
  maxPositions?: number;
}

const num = (v: unknown): number | undefined => (typeof v === "number" && Number.isFinite(v) && v > 0 ? v : undefined);

/** The text model's part of a config: multimodal configs nest it (text_config, llm_config, language_config). */
function textConfig(config: Readonly<Record<string, unknown>>): Readonly<Record<string, unknown>> {
  if (num(config["num_hidden_layers"]) !== undefined) return config;
  for (const k of ["text_config", "llm_config", "language_config"]) {
    const inner = config[k];
    if (typeof inner === "object" && inner !== null && !Array.isArray(inner))
      return {
        ...(inner as Record<string, unknown>),
        torch_dtype: config["torch_dtype"] ?? (inner as Record<string, unknown>)["torch_dtype"],
      };
  }
  return config;
}

/** The shape of a model from its config.json (or a partial one, such as a recipe's `[memory]`). */
export function shapeOf(config: Readonly<Record<string, unknown>>): ModelShape {
  const c = textConfig(config);
  const dtype =
    typeof c["torch_dtype"] === "string" ? c["torch_dtype"] : typeof c["dtype"] === "string" ? c["dtype"] : undefined;
  const layers = num(c["num_hidden_layers"]);
  const rank = num(c["kv_lora_rank"]);
  const heads = num(c["num_attention_heads"]);
  const hidden = num(c["hidden_size"]);
  const headDim = num(c["head_dim"]) ?? (hidden !== undefined && heads !== undefined ? hidden / heads : undefined);
  const kvHeads = num(c["num_key_value_heads"]) ?? heads;
  let attention: Attention | undefined;
  if (rank !== undefined) attention = { kind: "mla", latent: rank + (num(c["qk_rope_head_dim"]) ?? 0) };
  else if (kvHeads !== undefined && headDim !== undefined) attention = { kind: "gqa", kvHeads, headDim };
  const maxPositions = num(c["max_position_embeddings"]);
  return {
    ...(dtype !== undefined && { dtype }),
    ...(layers !== undefined && { layers }),
    ...(attention !== undefined && { attention }),
    ...(maxPositions !== undefined && { maxPositions }),
  };
}

/** Bytes of one element of a weight dtype as config.json names it. */
export function dtypeBytes(dtype: string | undefined): number | undefined {
  switch (dtype) {
    case "bfloat16":
    case "float16":
      return 2;
    case "float32":
      return 4;
    default:
      return undefined;
  }
}

/**
 * Bytes of one KV cache element for an engine's KV dtype flag (vLLM `--kv-cache-dtype`, SGLang's
 * too): `auto` is the model's dtype; the fp8 formats take one byte, fp4 half of one.
 */
export function kvElementBytes(kvDtype: string, modelDtype: string | undefined): number | undefined {
  const k = kvDtype.toLowerCase();
  if (k === "auto") return dtypeBytes(modelDtype) ?? 2;
  if (k.startsWith("fp8")) return 1;
  if (k.startsWith("fp4") || k === "nvfp4") return 0.5;
  if (k === "bfloat16" || k === "bf16" || k === "float16" || k === "fp16" || k === "half") return 2;
  if (k === "float32" || k === "fp32" || k === "float") return 4;
  return undefined;
}

/** Bytes one token's KV cache takes on one node, with tensor parallelism `tp` and pipeline parallelism `pp`. */
export function kvBytesPerToken(shape: ModelShape, elementBytes: number, tp: number, pp: number): number | undefined {
  const { layers, attention } = shape;
  if (layers === undefined || attention === undefined) return undefined;
  const perNodeLayers = Math.ceil(layers / pp);
  if (attention.kind === "mla") return perNodeLayers * attention.latent * elementBytes;
  const heads = Math.max(1, Math.floor(attention.kvHeads / tp));
  return 2 * perNodeLayers * heads * attention.headDim * elementBytes;
}

/** How the KV size was worked out, in words: `64 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes`. */
export function kvFormula(shape: ModelShape, elementBytes: number, tp: number, pp: number): string {
  const { layers, attention } = shape;
  if (layers === undefined || attention === undefined) return "unknown";
  const l = `${Math.ceil(layers / pp)} layers`;
  if (attention.kind === "mla") return `${l} x ${attention.latent} (latent, MLA) x ${elementBytes} bytes`;
  const heads = Math.max(1, Math.floor(attention.kvHeads / tp));
  return `${l} x ${heads} KV heads x ${attention.headDim} x 2 (K, V) x ${elementBytes} bytes`;
}
