/**
 * The memory fit's knowledge of each engine sits in its driver (seed 000: nothing outside the
 * drivers branches on the engine name): the utilization setting, its default, and where the
 * context length and the other knobs are read, each in the engine's own spelling.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DRIVERS } from "../src/engines";
import { parseRecipe } from "../src/engines/recipes";
import type { Sourced } from "../src/engines/memory";
import { say } from "../src/text/messages";

/** A knob with its source said in English. */
const en = <T>(s: Sourced<T> | undefined) => (s === undefined ? s : { ...s, from: say(s.from, "en") });

const recipe = (engine: string, body: string) =>
  parseRecipe(`recipes/${engine}.toml`, `engine = "${engine}"\nmodel = "Qwen/Qwen3-32B"\nport = 8000\n${body}`);

describe("each driver reads the fit's knobs the way its engine does", () => {
  it("vLLM: its flags in any spelling, else the default, and readiness.max_model_len when no flag sets it", () => {
    const args = '["--gpu-memory-utilization=0.6", "--kv-cache-dtype", "fp8"]';
    const r = recipe("vllm", `deploy = "docker"\nimage = "i"\ntp = 2\nargs = ${args}\n`);
    const k = DRIVERS.vllm.memory.knobs({ recipe: r, nodes: 2, readinessMaxLen: 8192 });
    expect({ ...k, util: en(k.util) }).toMatchObject({ util: { value: 0.6, from: "--gpu-memory-utilization" }, tp: 2 });
    expect(k.kvDtype.value).toBe("fp8");
    expect(en(k.maxModelLen)).toEqual({ value: 8192, from: "readiness.max_model_len" });
    expect(en(DRIVERS.vllm.memory.knobs({ nodes: 1 }).util)).toEqual({
      value: 0.9,
      from: "the engine's default",
      byDefault: true,
    });
  });
  it("vLLM under a script recipe: the profile's keys, a flag in EXTRA_VLLM_ARGS winning", () => {
    const keys = { MAX_MODEL_LEN: "262144", GPU_MEMORY_UTILIZATION: "0.7", EXTRA_VLLM_ARGS: "--max-model-len 131072" };
    const k = DRIVERS.vllm.memory.knobs({ keys, nodes: 1 });
    expect(en(k.maxModelLen)).toEqual({ value: 131072, from: "--max-model-len" });
    expect(en(k.util)).toEqual({ value: 0.7, from: "GPU_MEMORY_UTILIZATION" });
  });
  it("SGLang: --mem-fraction-static (its own estimate by default), --context-length", () => {
    const r = recipe("sglang", 'deploy = "docker"\nimage = "i"\nargs = ["--context-length", "4096"]\n');
    const k = DRIVERS.sglang.memory.knobs({ recipe: r, nodes: 1 });
    expect(en(k.util)).toEqual({ value: 0.88, from: "the engine's default (about)", byDefault: true });
    expect(en(k.maxModelLen)).toEqual({ value: 4096, from: "--context-length" });
    expect(DRIVERS.sglang.memory).toMatchObject({ overheadInBudget: false });
    expect(say(DRIVERS.sglang.memory.utilName, "ru")).toBe("--mem-fraction-static");
  });
  it("gr8: a fixed budget, whatever the recipe says", () => {
    expect(en(DRIVERS.gr8.memory.knobs({ nodes: 4 }).util)).toEqual({
      value: 0.9,
      from: "the engine's default",
      byDefault: true,
    });
    expect(say(DRIVERS.gr8.memory.utilName, "en")).toBe("gr8's fixed budget");
    expect(say(DRIVERS.gr8.memory.utilName, "ru")).toBe("фиксированный бюджет gr8");
  });
});

describe("the memory fit outside the drivers", () => {
  it("names no engine: adding one touches its driver alone", () => {
    for (const f of ["memknobs.ts", "memfit.ts", "nodefit.ts"]) {
      const text = readFileSync(join(__dirname, "..", "src", "render", f), "utf8");
      for (const engine of Object.keys(DRIVERS)) {
        expect(text, `${f} names ${engine}`).not.toMatch(new RegExp(`["'\`]${engine}["'\`]`));
      }
    }
  });
});
