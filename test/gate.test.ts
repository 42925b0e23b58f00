/**
 * The gate of an up, pure parts: a recipe's `[gate]` (its defaults, its refusals), the plan's line,
 * the prompt set, the verdict against a baseline (the tolerances at their edges, another load, an
 * accepted slower run), the state it leaves, the numbers side by side and what changed.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { GATE_DEFAULTS, type RecipeGate } from "../src/recipe/gate";
import { gateLine } from "../src/render/plan";
import { gatePrompt } from "../src/serve/gateprompts";
import { gateChanges, gateRows, judgeGate, nextGateState, type GateMeasure } from "../src/serve/gatejudge";
import type { DeploymentBundle } from "../src/render/types";
import { listMsg, say } from "../src/text/messages";
import { errorsOf } from "./helpers/spec";

const F = "recipes/x.toml";
const BASE = ['model = "Qwen/Qwen3-8B"', 'image = "nvcr.io/nvidia/vllm:26.01-py3"', "port = 8000", ""].join("\n");

describe("a recipe's [gate]", () => {
  it("takes its defaults from an empty table, and each field as written", () => {
    expect(parseRecipe(F, `${BASE}[gate]\n`).gate).toEqual(GATE_DEFAULTS);
    const r = parseRecipe(F, `${BASE}[gate]\nrequests = 8\nconcurrency = 2\nttft_tolerance = 0.5\n`);
    expect(r.gate).toEqual({ ...GATE_DEFAULTS, requests: 8, concurrency: 2, ttftTolerance: 0.5 });
    expect(parseRecipe(F, BASE).gate).toBeUndefined();
  });

  it("refuses a count that is no whole number, a tolerance out of range and an unknown key, at their lines", () => {
    const text = `${BASE}[gate]\nrequests = 0\ntokens_per_s_tolerance = 1.5\nmax_token = 64\n`;
    expect(errorsOf(() => parseRecipe(F, text))).toEqual([
      `${F}:5:1: gate.requests: a whole number from 1 to 10000; write e.g. 16 (docs/recipes.md, [gate])`,
      `${F}:6:1: gate.tokens_per_s_tolerance: a tolerance is a share of the baseline, above 0 and below 1; ` +
        "write e.g. 0.1 (that share of the baseline; docs/recipes.md, [gate])",
      `${F}:7:1: gate.max_token: unknown key; did you mean max_tokens?`,
    ]);
  });

  it("is said by the plan in one line", () => {
    expect(gateLine(GATE_DEFAULTS)).toBe(
      "gate after a restart of its first replica: 16 requests, 4 at once, 256-word prompts, 128 tokens each; " +
        "tokens/s at least 0.9 x, first token at most 1.25 x the baseline",
    );
  });
});

describe("the prompt set", () => {
  it("numbers each request and gives it the asked length, the same words at every run", () => {
    const p = gatePrompt(0, 12);
    expect(p.split(" ")).toHaveLength(12);
    expect(p).toBe("1. Explain how a hash table handles collisions, and compare chaining with");
    expect(gatePrompt(16, 3)).toBe("17. Explain how");
    expect(gatePrompt(5, 40)).toBe(gatePrompt(5, 40));
    expect(gatePrompt(1, 1)).toBe("2.");
  });
});

const load = { requests: 16, concurrency: 4, promptTokens: 256, maxTokens: 128, prompts: "sm121-gate-1" };
const run = (tokensPerS: number, ttftMs: number, extra: Partial<GateMeasure> = {}): GateMeasure => ({
  tokensPerS,
  ttftMs,
  durationS: 4,
  load,
  at: "2026-12-06T10:00:00.000Z",
  node: "spark1",
  identity: "a".repeat(64),
  digest: `sha256:${"1".repeat(64)}`,
  ...extra,
});
const spec: RecipeGate = GATE_DEFAULTS;
const sorted = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).sort(([a], [b]) => a.localeCompare(b))) as T;

describe("the verdict", () => {
  const base = run(100, 200);
  it.each([
    ["no baseline yet", undefined, run(100, 200), false, "baseline"],
    ["the same numbers", base, run(100, 200), false, "passed"],
    ["tokens/s at the limit (0.9 x)", base, run(90, 200), false, "passed"],
    ["tokens/s just under it", base, run(89.9, 200), false, "slower"],
    ["20 % slower", base, run(80, 200), false, "slower"],
    ["the first token at the limit (1.25 x)", base, run(100, 250), false, "passed"],
    ["the first token just over it", base, run(100, 250.1), false, "slower"],
    ["faster", base, run(130, 150), false, "passed"],
    ["slower, accepted for this run", base, run(80, 200), true, "accepted"],
    ["another load", base, run(50, 900, { load: { ...load, maxTokens: 64 } }), false, "new-load"],
    // The state keeps an object's keys sorted: the same load in another order is the same load.
    ["the same load, its keys in another order", base, run(80, 200, { load: sorted(load) }), false, "slower"],
  ] as const)("%s: %s", (_t, b, now, accepted, want) => {
    expect(judgeGate(spec, b, now, accepted)).toBe(want);
  });

  it("keeps the baseline after a slower run and records the run; any other verdict makes the run the baseline", () => {
    const slow = run(80, 200);
    expect(nextGateState({ baseline: base }, slow, "slower")).toEqual({
      baseline: base,
      last: { ...slow, verdict: "slower" },
    });
    const fast = run(120, 190);
    expect(nextGateState({ baseline: base }, fast, "passed")).toEqual({
      baseline: fast,
      last: { ...fast, verdict: "passed" },
    });
    expect(nextGateState(undefined, slow, "accepted").baseline).toEqual(slow);
  });

  it("says the numbers side by side, with the limits and which is worse", () => {
    const rows = gateRows(spec, base, run(80, 260)).map((m) => say(m, "en"));
    expect(rows).toEqual([
      "output tokens/s: baseline 100.0, now 80.0, limit at least 90.0: worse",
      "time to first token (median, ms): baseline 200, now 260, limit at most 250: worse",
    ]);
    expect(say(listMsg(gateRows(spec, base, run(95, 100)), "lines"), "ru")).toContain("в допуске");
  });
});

describe("what changed since the baseline", () => {
  const node = (argv: string[], image: string, envKeys?: Record<string, string>) => ({
    node: "spark1",
    argv,
    image,
    env: { VLLM_LOGGING_LEVEL: "INFO" },
    ...(envKeys !== undefined && { envKeys }),
    api: { host: "10.0.0.1", port: 8000, url: "http://10.0.0.1:8000" },
  });
  const bundle = (n: ReturnType<typeof node>) => ({ nodes: [n] }) as unknown as DeploymentBundle;
  const argv = ["vllm", "serve", "m", "--max-num-seqs", "8"];

  it("names the flags, the image, the profile keys and the digest, secrets masked", () => {
    const before = bundle(node(argv, "v:1", { MAX_NUM_SEQS: "8", HF_TOKEN: "hf_x" }));
    const after = bundle(
      node([...argv.slice(0, 3), "--max-num-seqs", "2", "--enforce-eager"], "v:2", {
        MAX_NUM_SEQS: "2",
        HF_TOKEN: "hf_y",
      }),
    );
    const words = say(gateChanges(before, after, { before: "sha256:aaaa", after: "sha256:bbbb" }), "en");
    expect(words).toBe(
      "flags - --max-num-seqs 8, + --max-num-seqs 2, + --enforce-eager; image v:1 -> v:2; " +
        "profile keys HF_TOKEN (secret) -> (secret), MAX_NUM_SEQS 8 -> 2; image digest sha256:aaaa -> sha256:bbbb",
    );
  });

  it("says when nothing of sm121's changed: the engine's or the machine's", () => {
    const b = bundle(node(argv, "v:1"));
    const d = `sha256:${"1".repeat(64)}`;
    expect(say(gateChanges(b, b, { before: d, after: d }), "en")).toMatch(/^nothing in the recipe/);
  });
});
