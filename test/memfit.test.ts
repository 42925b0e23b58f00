/**
 * The memory fit against real model configs (test/fixtures/models, see its README for where the
 * values come from): KV bytes per token as the engines size them, weights from the safetensors
 * index, and the verdicts a GB10 gives for recipes an operator would write.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import type { Recipe } from "../src/recipe/types";
import { renderSite } from "../src/render/deployment";
import { deploymentFits, fitLines, fitOf, fitWarnings, GB10_MEM_TOTAL_BYTES, ranksPerNode } from "../src/render/memfit";
import { fitRefusal } from "../src/render/fitrefusal";
import type { Fit, NodeModelFacts } from "../src/render/memfit";
import { nodeBudgets, nodeLines, nodeRefusals, planFitLines } from "../src/render/nodefit";
import { kvBytesPerToken, kvElementBytes, shapeOf } from "../src/render/modelshape";
import { say } from "../src/text/messages";
import { errorsOf } from "./helpers/spec";

const ROOT = join(__dirname, "..");
const MODELS = join(__dirname, "fixtures", "models");
const config = (dir: string) =>
  JSON.parse(readFileSync(join(MODELS, dir, "config.json"), "utf8")) as Record<string, unknown>;
const totalSize = (dir: string) =>
  (
    JSON.parse(readFileSync(join(MODELS, dir, "model.safetensors.index.json"), "utf8")) as {
      metadata: { total_size: number };
    }
  ).metadata.total_size;
const KIB = 1024;
const GIB = 1024 ** 3;

describe("KV cache per token from real config.json files", () => {
  type Case = [model: string, kvDtype: string, tp: number, bytes: number];
  const cases: Case[] = [
    // 2 (K, V) x 64 layers x 8 KV heads x 128 x 2 bytes: 256 KiB, the figure Qwen3-32B is known by.
    ["Qwen--Qwen3-32B", "auto", 1, 256 * KIB],
    ["Qwen--Qwen3-32B", "auto", 2, 128 * KIB],
    ["Qwen--Qwen3-32B", "fp8", 2, 64 * KIB],
    // 48 layers x 4 KV heads: 96 KiB; tp 8 leaves one head per rank (vLLM replicates), not a half.
    ["Qwen--Qwen3-30B-A3B", "auto", 1, 96 * KIB],
    ["Qwen--Qwen3-30B-A3B", "auto", 8, 24 * KIB],
    // Llama-3.1-8B: head_dim from hidden_size / num_attention_heads = 128; 128 KiB per token.
    ["meta-llama--Llama-3.1-8B-Instruct", "auto", 1, 128 * KIB],
    // GLM-4.5-Air: 46 layers x 8 KV heads x 128 x 2 x 2 bytes.
    ["zai-org--GLM-4.5-Air", "auto", 1, 2 * 46 * 8 * 128 * 2],
    ["zai-org--GLM-4.5-Air", "fp8_e4m3", 4, 2 * 46 * 2 * 128],
    // MLA: 61 layers x (512 + 64) x 2 bytes = 70,272 bytes (about 69 KiB), the same on every tp rank.
    ["deepseek-ai--DeepSeek-V3", "auto", 1, 70_272],
    ["deepseek-ai--DeepSeek-V3", "auto", 4, 70_272],
    ["deepseek-ai--DeepSeek-V3", "fp8", 4, 35_136],
  ];
  it.each(cases)("%s, kv %s, tp %i", (model, kvDtype, tp, bytes) => {
    const shape = shapeOf(config(model));
    expect(kvBytesPerToken(shape, kvElementBytes(kvDtype, shape.dtype) ?? NaN, tp, 1)).toBe(bytes);
  });

  it("pipeline parallelism splits the layers", () => {
    expect(kvBytesPerToken(shapeOf(config("Qwen--Qwen3-32B")), 2, 1, 2)).toBe(128 * KIB);
  });

  it("an unknown KV dtype is unknown, not a guess", () => {
    expect(kvElementBytes("int3", "bfloat16")).toBeUndefined();
  });
});

/** One node: spark1..4 on lines 3-6. */
const SITE = [
  "config:",
  "  sm121:nodes:",
  ...[1, 2, 3, 4].map((i) => `    spark${i}: { host: local, ip: 203.0.113.${i}, env: { HF_HOME: /hf } }`),
  "  sm121:deployments:",
  "",
].join("\n");

function fitFor(recipeText: string, nodes: string[], facts: Record<string, NodeModelFacts>) {
  const recipe: Recipe = parseRecipe("recipes/r.toml", recipeText);
  const site = parseSite("Pulumi.s.yaml", "s", `${SITE}    - { recipe: r, nodes: [${nodes.join(", ")}] }\n`);
  const [b] = renderSite(site, new Map([["r", recipe]]), { root: ROOT });
  if (b === undefined) throw new Error("no bundle");
  return { fit: fitOf(b, recipe, facts), file: recipe.file };
}

const QWEN32 = {
  config: config("Qwen--Qwen3-32B"),
  weightsBytes: totalSize("Qwen--Qwen3-32B"),
  memTotalBytes: GB10_MEM_TOTAL_BYTES,
};
const vllm = (model: string, tp: number, args: string, extra = "") =>
  `model = "${model}"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\ntp = ${tp}\nport = 8000\nargs = [${args}]\n${extra}`;

describe("the fit of a deployment on GB10 nodes", () => {
  it(
    "Qwen3-32B on two nodes at tp 2: 30.5 GiB of weights and 4 GiB of KV cache for 32768 tokens per node, " +
      "4 sequences fit",
    () => {
      const { fit } = fitFor(
        vllm(
          "Qwen/Qwen3-32B",
          2,
          '"--max-model-len", "32768", "--max-num-seqs", "4", "--gpu-memory-utilization", "0.85"',
        ),
        ["spark1", "spark2"],
        { spark1: QWEN32, spark2: { memTotalBytes: GB10_MEM_TOTAL_BYTES } },
      );
      const n = fit.nodes[1];
      expect(n?.weightsGiB).toBeCloseTo(65_527_752_704 / 2 / GIB, 6); // 30.51 GiB
      expect(n?.kvOneGiB).toBe(4); // 32768 tokens x 128 KiB
      expect(n?.kvAllGiB).toBe(16);
      expect(n?.budgetGiB).toBeCloseTo((127_601_452 * 1024 * 0.85) / GIB, 6); // 103.4 GiB
      expect(n?.needGiB).toBeCloseTo(65_527_752_704 / 2 / GIB + 4 + 4, 6);
      expect(fit.verdict).toBe("fits");
      expect(say(fit.weightsFrom ?? { key: "fit.unknown" }, "en")).toBe("the safetensors index in spark1's HF cache");
      expect(fitRefusal(fit, "recipes/r.toml")).toBeUndefined();
    },
  );

  it("names the engine's setting to raise when the utilization is its default, whatever the words say", () => {
    const recipe = vllm("Qwen/Qwen3-32B", 1, '"--max-model-len", "32768", "--gpu-memory-utilization", "0.5"');
    const { fit, file } = fitFor(recipe, ["spark1"], { spark1: QWEN32 });
    const anything = { key: "state.recorded" as const, args: { text: "anything" } };
    const util = (byDefault: boolean): Fit => {
      const { byDefault: _was, ...rest } = fit.knobs.util;
      const from = { ...rest, from: anything };
      return { ...fit, knobs: { ...fit.knobs, util: byDefault ? { ...from, byDefault: true } : from } };
    };
    expect(fitRefusal(util(true), file)).toContain(
      "MemTotal, anything); what can make it fit, in recipes/r.toml: raise --gpu-memory-utilization to 0.61;",
    );
    expect(fitRefusal(util(false), file)).toContain(
      "; what can make it fit, in recipes/r.toml: raise anything to 0.61;",
    );
  });

  it("at the default utilization of 0.9 names no utilization: the weights leave room for a shorter context", () => {
    const recipe = vllm("Qwen/Qwen3-32B", 1, '"--max-model-len", "400000"');
    const { fit, file } = fitFor(recipe, ["spark1"], { spark1: QWEN32 });
    expect(fit.knobs.util).toMatchObject({ value: 0.9, byDefault: true });
    const said = fitRefusal(fit, file) ?? "";
    expect(said).toContain("what can make it fit, in recipes/r.toml: a shorter context: max_model_len 181248 or less;");
    expect(said).not.toContain("raise");
  });

  it("Qwen3-32B on one node at --gpu-memory-utilization 0.5 cannot fit: refused, with the numbers", () => {
    const { fit, file } = fitFor(
      vllm("Qwen/Qwen3-32B", 1, '"--max-model-len", "32768", "--gpu-memory-utilization", "0.5"'),
      ["spark1"],
      { spark1: QWEN32 },
    );
    expect(fit.verdict).toBe("refused");
    expect(fitRefusal(fit, file)).toBe(
      [
        "deployment r cannot fit in memory (Qwen/Qwen3-32B): spark1: weights 61.0 GiB",
        "+ KV cache 8.0 GiB (one sequence of 32768 tokens, auto) + engine overhead 4.0 GiB = 73.0 GiB per node",
        "> 60.8 GiB (0.5 x 121.7 GiB MemTotal, --gpu-memory-utilization); what can make it fit, in",
        "recipes/r.toml: raise --gpu-memory-utilization to 0.61; a quantized checkpoint (fp8 weights: about 30.5 GiB",
        "a node); more nodes: 2 of them, the model split across them (tp);",
        "when the engine is known to fit (the overhead is an estimate: [memory] overhead_gib sets it),",
        "SM121_ALLOW_UNFIT=spark1 lets this run go on",
      ].join(" "),
    );
  });

  it("max_num_seqs full sequences that do not fit make the plan tight, not refused", () => {
    // 40960 tokens (the config's default) x 256 KiB = 10 GiB per sequence; 103.4 - 61 - 4 leaves room for 3.
    const { fit } = fitFor(
      vllm("Qwen/Qwen3-32B", 1, '"--max-num-seqs", "16", "--gpu-memory-utilization", "0.85"'),
      ["spark1"],
      { spark1: QWEN32 },
    );
    const len = fit.knobs.maxModelLen;
    expect(len === undefined ? len : { ...len, from: say(len.from, "en") }).toEqual({
      value: 40960,
      from: "config.json max_position_embeddings (the engine's default)",
      byDefault: true,
    });
    expect(fit.nodes[0]?.verdict).toBe("tight");
    expect(fit.nodes[0]?.sequences).toBe(3);
    expect(fitLines(fit).at(-1)).toBe(
      "  tight: the KV cache holds 3 of the 16 sequences of 40960 tokens (--max-num-seqs)",
    );
  });

  it("the KV dtype flag counts in any spelling vLLM takes: fp8 halves the cache", () => {
    const { fit } = fitFor(
      vllm("Qwen/Qwen3-32B", 1, '"--max_model_len=32768", "--kv-cache-dtype", "fp8"'),
      ["spark1"],
      { spark1: QWEN32 },
    );
    expect(say(fit.knobs.maxModelLen?.from ?? { key: "fit.unknown" }, "en")).toBe("--max-model-len");
    expect(fit.nodes[0]?.kvOneGiB).toBe(4);
  });

  it("without the checkpoint on a node, the recipe's [memory] block answers; render takes a GB10's memory", () => {
    const mem =
      "[memory]\nweights_gb = 65.53\nnum_hidden_layers = 64\nnum_key_value_heads = 8\nhead_dim = 128\n" +
      'torch_dtype = "bfloat16"\n';
    const { fit } = fitFor(vllm("Qwen/Qwen3-32B", 2, '"--max-model-len", "32768"', mem), ["spark1", "spark2"], {});
    expect(say(fit.weightsFrom ?? { key: "fit.unknown" }, "en")).toBe("[memory] weights_gb in recipes/r.toml");
    expect(say(fit.shapeFrom ?? { key: "fit.unknown" }, "en")).toBe("[memory] in recipes/r.toml");
    expect(fit.nodes[0]?.memoryFrom).toBe("GB10");
    expect(fit.nodes[0]?.kvOneGiB).toBe(4);
    expect(fit.verdict).toBe("fits");
  });

  it("without the checkpoint, the hub and [memory], the fit is unknown, refuses nothing, and is said in words", () => {
    const { fit } = fitFor(vllm("Qwen/Qwen3-32B", 1, ""), ["spark1"], {});
    expect(fit.verdict).toBe("unknown");
    const why =
      "the weights' size is unknown: the checkpoint is in no node's HF cache, the hub gave no size through a node, " +
      "and recipes/r.toml has no [memory] weights_gb";
    expect(fitLines(fit).at(-1)).toBe(`  unknown: ${why}`);
    // Not a table of question marks in the plan: a warning in words, with what an up risks and the fix.
    const b = { recipeFile: "recipes/r.toml" } as Parameters<typeof fitWarnings>[0][number]["b"];
    expect(planFitLines([{ fit }], [], new Set())).toEqual([]);
    expect(fitWarnings([{ b, fit }])).toEqual([
      `memory fit of r is unknown: ${why}. An up starts it without knowing whether it fits in memory (on a GB10 ` +
        "a load that does not fit can take the node down): put its size and shape in [memory] of recipes/r.toml " +
        "(docs/recipes.md), or the checkpoint in a node's HF cache",
    ]);
  });

  it("reads the model's size and shape from the hub through a node, and says so", () => {
    const hub = { ...QWEN32, fromHub: true };
    const { fit } = fitFor(vllm("Qwen/Qwen3-32B", 2, '"--gpu-memory-utilization", "0.85"'), ["spark1", "spark2"], {
      spark1: hub,
      spark2: { memTotalBytes: GB10_MEM_TOTAL_BYTES },
    });
    expect(fit.verdict).not.toBe("unknown");
    expect(say(fit.weightsFrom ?? { key: "fit.unknown" }, "en")).toBe(
      "the safetensors index of Qwen/Qwen3-32B on the hub, read through spark1",
    );
    expect(say(fit.shapeFrom ?? { key: "fit.unknown" }, "en")).toBe(
      "config.json of Qwen/Qwen3-32B on the hub, read through spark1",
    );
  });

  it("a model larger than the node names what can make it fit, never a utilization", () => {
    // Llama-3.3-70B in bf16: 141.1 GB of weights, 80 layers x 8 KV heads x 128.
    const memory =
      '[memory]\nweights_gb = 141.1\ntorch_dtype = "bfloat16"\nnum_hidden_layers = 80\n' +
      "num_key_value_heads = 8\nhead_dim = 128\n";
    const text = vllm("meta-llama/Llama-3.3-70B-Instruct", 1, '"--max-model-len", "32768"', memory);
    const { fit, file } = fitFor(text, ["spark1"], { spark1: { memTotalBytes: GB10_MEM_TOTAL_BYTES } });
    const said = fitRefusal(fit, file) ?? "";
    expect(said).toContain("spark1: weights 131.4 GiB + KV cache 10.0 GiB");
    expect(said).toContain(
      "what can make it fit, in recipes/r.toml: a quantized checkpoint (fp8 weights: about 65.7 GiB a node); " +
        "more nodes: 2 of them, the model split across them (tp);",
    );
    expect(said).not.toMatch(/raise|max_model_len \d+ or less|fp8 KV/);
  });

  it("SGLang's --mem-fraction-static budgets weights and KV only; its overhead lives outside", () => {
    const text =
      'engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-30B-A3B"\ntp = 2\nport = 30000\n' +
      'args = ["--context-length", "65536", "--mem-fraction-static", "0.8"]\n[memory]\n' +
      "weights_gb = 61.06\n";
    const facts = { config: config("Qwen--Qwen3-30B-A3B"), memTotalBytes: GB10_MEM_TOTAL_BYTES };
    const { fit } = fitFor(text, ["spark1", "spark2"], { spark1: facts, spark2: facts });
    expect({ ...fit.knobs.util, from: say(fit.knobs.util.from, "en") }).toEqual({
      value: 0.8,
      from: "--mem-fraction-static",
    });
    expect(fit.nodes[0]?.kvOneGiB).toBe(3); // 65536 tokens x 48 KiB (2 KV heads per rank)
    expect(fit.nodes[0]?.needGiB).toBeCloseTo(61.06e9 / 2 / GIB + 3, 6);
  });

  it("prints a table with every node's numbers", () => {
    const { fit } = fitFor(
      vllm("Qwen/Qwen3-32B", 2, '"--max-model-len", "32768", "--gpu-memory-utilization", "0.85"'),
      ["spark1", "spark2"],
      { spark1: QWEN32, spark2: QWEN32 },
    );
    expect(fitLines(fit)).toEqual([
      "memory fit of r: Qwen/Qwen3-32B on vllm, tp 2, max_model_len 32768 (--max-model-len), " +
        "max_num_seqs not set (one full sequence asked)",
      "  weights: the safetensors index in spark1's HF cache; KV dtype auto (the engine's default); " +
        "KV cache: 128 KiB per token per node = 64 layers x 4 KV heads x 128 x 2 (K, V) x 2 bytes, " +
        "shape from config.json in spark1's HF cache",
      "  budget: 0.85 of each node's memory (--gpu-memory-utilization)",
      "  NODE    MEMORY     BUDGET     WEIGHTS   KV CACHE  OVERHEAD  NEED      VERDICT",
      "  spark1  121.7 GiB  103.4 GiB  30.5 GiB  4.0 GiB   4.0 GiB   38.5 GiB  fits (17 full seq)",
      "  spark2  121.7 GiB  103.4 GiB  30.5 GiB  4.0 GiB   4.0 GiB   38.5 GiB  fits (17 full seq)",
    ]);
  });
});

describe("the real split: a node holds its ranks' share", () => {
  it("tp 2 on one node keeps the whole model and both ranks' KV cache there, not half of it", () => {
    const args = '"--max-model-len", "32768", "--gpu-memory-utilization", "0.5"';
    const recipe = parseRecipe("recipes/r.toml", vllm("Qwen/Qwen3-32B", 2, args));
    const site = parseSite("Pulumi.s.yaml", "s", `${SITE}    - { recipe: r, nodes: [spark1, spark2] }\n`);
    const [two] = renderSite(site, new Map([["r", recipe]]), { root: ROOT });
    if (two === undefined) throw new Error("no bundle");
    // The same recipe on one node: what an operator who lists one node gets.
    const fit = fitOf({ ...two, nodes: two.nodes.slice(0, 1) }, recipe, { spark1: QWEN32 });
    expect(ranksPerNode(fit.knobs, 1)).toBe(2);
    expect(fit.nodes[0]?.weightsGiB).toBeCloseTo(65_527_752_704 / GIB, 6); // 61.0 GiB, not 30.5
    expect(fit.nodes[0]?.kvOneGiB).toBe(8); // 32768 tokens x 2 ranks x 128 KiB
    expect(say(fit.kvFormula, "en")).toBe("64 layers x 4 KV heads x 128 x 2 (K, V) x 2 bytes x 2 ranks on a node");
    expect(fit.verdict).toBe("refused");
    // On its two nodes each holds one rank: half of each.
    const spread = fitOf(two, recipe, { spark1: QWEN32, spark2: QWEN32 });
    expect(spread.nodes[0]?.weightsGiB).toBeCloseTo(65_527_752_704 / 2 / GIB, 6);
  });
});

describe("one memory budget per node", () => {
  const two = (utilA: string, utilB: string, nodeB = "spark1") => {
    const a = parseRecipe("recipes/a.toml", vllm("Qwen/Qwen3-32B", 1, `"--gpu-memory-utilization", "${utilA}"`));
    const bArgs = `"--gpu-memory-utilization", "${utilB}"`;
    const bText = vllm("Qwen/Qwen3-32B", 1, bArgs).replace("port = 8000", "port = 8001");
    const b = parseRecipe("recipes/b.toml", bText);
    const deployments = `    - { recipe: a, nodes: [spark1] }\n    - { recipe: b, nodes: [${nodeB}] }\n`;
    const site = parseSite("Pulumi.s.yaml", "s", `${SITE}${deployments}`);
    const recipes = new Map([
      ["a", a],
      ["b", b],
    ]);
    return deploymentFits(renderSite(site, recipes, { root: ROOT }), recipes, { spark1: QWEN32, spark2: QWEN32 });
  };

  it("sums every deployment's claim on a node; refuses an over-committed node with each share and the fix", () => {
    const budgets = nodeBudgets(two("0.5", "0.5"));
    expect(budgets).toHaveLength(1);
    expect(budgets[0]?.verdict).toBe("over");
    expect(nodeRefusals(budgets)).toEqual([
      {
        nodes: ["spark1"],
        text: [
          "node spark1 is over-committed:",
          "a claims 60.8 GiB (0.5 x 121.7 GiB (--gpu-memory-utilization in recipes/a.toml)) +",
          "b claims 60.8 GiB (0.5 x 121.7 GiB (--gpu-memory-utilization in recipes/b.toml)) =",
          "121.7 GiB > 109.5 GiB (0.9 x 121.7 GiB MemTotal; the rest is the OS's);",
          "lower the deployments' utilization so that their shares add up to at most 0.9,",
          "or move one of them to another node; SM121_ALLOW_UNFIT=spark1 lets this run go on",
        ].join(" "),
      },
    ]);
  });

  it("accepts two deployments whose claims fit together, and shows the node's total against its memory", () => {
    const budgets = nodeBudgets(two("0.45", "0.4"));
    expect(nodeRefusals(budgets)).toEqual([]);
    expect(nodeLines(budgets)).toEqual([
      "memory per node: each deployment's claim (its utilization x MemTotal), together at most 0.9 of MemTotal",
      "  NODE    MEMORY     CLAIMS                   TOTAL      VERDICT",
      "  spark1  121.7 GiB  a 54.8 GiB + b 48.7 GiB  103.4 GiB  fits (limit 109.5 GiB)",
    ]);
  });

  describe("the plan's tables: what starts, and the nodes it uses", () => {
    const steadyLine = (ds: string) =>
      `memory fit: ${ds} run as declared on their nodes (sm121 doctor shows their fit)`;
    const titles = (lines: string[]) => lines.filter((l) => !l.startsWith(" "));

    it("shows a starting deployment's table and its nodes; one line for those that keep serving", () => {
      const fits = two("0.45", "0.4", "spark2");
      const lines = planFitLines(fits, nodeBudgets(fits), new Set(["b"]));
      expect(titles(lines)).toEqual([
        expect.stringMatching(/^memory fit of a: /),
        expect.stringMatching(/^memory per node: /),
        steadyLine("b"),
      ]);
      const rows = lines.filter((l) => /^ {2}spark\d/.test(l));
      expect(rows.map((l) => l.trim().split(/\s+/)[0])).toEqual(["spark1", "spark1"]);
      expect(lines.join("\n")).not.toMatch(/memory fit of b|b 48\.7 GiB/);
    });

    it("shows a running neighbour's claim on a node that a starting deployment shares", () => {
      const fits = two("0.45", "0.4");
      const lines = planFitLines(fits, nodeBudgets(fits), new Set(["b"]));
      expect(lines).toContain("  spark1  121.7 GiB  a 54.8 GiB + b 48.7 GiB  103.4 GiB  fits (limit 109.5 GiB)");
      expect(lines.at(-1)).toBe(steadyLine("b"));
    });

    it("when everything keeps serving: one line, and a node over its limit still shown", () => {
      const fine = two("0.45", "0.4", "spark2");
      expect(planFitLines(fine, nodeBudgets(fine), new Set(["a", "b"]))).toEqual([steadyLine("a, b")]);
      const over = two("0.5", "0.5");
      const lines = planFitLines(over, nodeBudgets(over), new Set(["a", "b"]));
      expect(titles(lines)).toEqual([expect.stringMatching(/^memory per node: /), steadyLine("a, b")]);
      expect(lines.join("\n")).toMatch(/spark1 .* 121\.7 GiB .* refused/);
    });
  });

  it("leaves a node that one deployment has to that deployment's own fit", () => {
    const recipe = parseRecipe("recipes/r.toml", vllm("Qwen/Qwen3-32B", 1, '"--gpu-memory-utilization", "0.95"'));
    const site = parseSite("Pulumi.s.yaml", "s", `${SITE}    - { recipe: r, nodes: [spark1] }\n`);
    const recipes = new Map([["r", recipe]]);
    const budgets = nodeBudgets(deploymentFits(renderSite(site, recipes, { root: ROOT }), recipes, {}));
    expect(budgets.map((n) => [n.node, n.verdict])).toEqual([["spark1", "fits"]]);
  });
});

describe("the recipe's [memory] block is checked like every field", () => {
  it("names the file, line, column, field and fix", () => {
    expect(
      errorsOf(() =>
        parseRecipe(
          "recipes/r.toml",
          'model = "m/x"\nimage = "i"\n[memory]\nweights_gb = "big"\nnum_hidden_layer = 3\n',
        ),
      ),
    ).toEqual([
      "recipes/r.toml:4:1: memory.weights_gb: weights_gb is the checkpoint's size in GB (10^9 bytes); " +
        "write e.g. 65.5 (the safetensors index's metadata.total_size / 1e9)",
      "recipes/r.toml:5:1: memory.num_hidden_layer: unknown key; did you mean num_hidden_layers?",
    ]);
  });
});
