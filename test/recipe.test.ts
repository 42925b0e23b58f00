/** Valid recipes: defaults, the unknown-engine fallback, and every example recipe of recipes/. */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { loadRecipes, parseRecipe } from "../src/engines/recipes";
import type { Recipe } from "../src/recipe/types";

const ROOT = join(__dirname, "..");
const RECIPES = join(ROOT, "recipes");

const VLLM = ['model = "Qwen/Qwen3-8B"', 'image = "nvcr.io/nvidia/vllm:26.01-py3"', "port = 8000", ""].join("\n");

describe("parseRecipe: defaults", () => {
  const r = parseRecipe("recipes/qwen3-8b.toml", VLLM);

  it("names the recipe after the file stem", () => {
    expect(r.name).toBe("qwen3-8b");
    expect(r.file).toBe("recipes/qwen3-8b.toml");
  });

  it("defaults to engine vllm, deploy docker, tp 1, rollback off", () => {
    expect(r.engine).toBe("vllm");
    expect(r.engineAsWritten).toBe("vllm");
    expect(r.deploy).toBe("docker");
    expect(r.tp).toBe(1);
    expect(r.rollback).toBe("off");
  });

  it("defaults readiness to a 1800 s timeout with no proofs and no max_model_len", () => {
    expect(r.readiness).toEqual({ timeoutS: 1800, proofs: [] });
  });

  it("defaults the lists and tables to empty and sets no optional field", () => {
    expect(r.args).toEqual([]);
    expect(r.env).toEqual({});
    expect(r.mounts).toEqual([]);
    expect(r.hooks).toEqual({ beforeServe: [], afterStop: [] });
    expect(r.warnings).toEqual([]);
    for (const k of ["servedModelName", "entrypoint", "dgpp", "profilesDir"] as const) expect(r[k]).toBeUndefined();
  });

  it("keeps an explicit name over the file stem", () => {
    expect(parseRecipe("recipes/x.toml", `name = "my-recipe"\n${VLLM}`).name).toBe("my-recipe");
  });

  it("maps snake_case fields to the Recipe shape", () => {
    const text = [
      'served_model_name = "qwen3-8b"',
      'entrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]',
      'args = ["--max-model-len", "8192"]',
      'mounts = ["~/models:/models:ro"]',
      'rollback = "auto"',
      VLLM,
      "[env]",
      'NCCL_IB_DISABLE = "1"',
      "[hooks]",
      'before_serve = ["true"]',
      'after_stop = ["echo done"]',
      "[readiness]",
      "timeout_s = 60",
      "max_model_len = 8192",
      'proofs = ["Application startup complete"]',
      "",
    ].join("\n");
    const x = parseRecipe("recipes/x.toml", text);
    expect(x.servedModelName).toBe("qwen3-8b");
    expect(x.entrypoint).toEqual(["python3", "-m", "vllm.entrypoints.openai.api_server"]);
    expect(x.args).toEqual(["--max-model-len", "8192"]);
    expect(x.mounts).toEqual(["~/models:/models:ro"]);
    expect(x.rollback).toBe("auto");
    expect(x.env).toEqual({ NCCL_IB_DISABLE: "1" });
    expect(x.hooks).toEqual({ beforeServe: ["true"], afterStop: ["echo done"] });
    expect(x.readiness).toEqual({ timeoutS: 60, maxModelLen: 8192, proofs: ["Application startup complete"] });
  });
});

describe("parseRecipe: the [dgpp] block", () => {
  it("defaults dir to ~/dgpp, http_port to 18080 and the engine table to empty", () => {
    const r = parseRecipe("recipes/d.toml", 'engine = "dgpp"\ndeploy = "native"\nmodel = "Qwen/Qwen3.8-27B"\n[dgpp]\n');
    expect(r.dgpp).toEqual({ dir: "~/dgpp", httpPort: 18080, engine: {} });
    expect(r.port).toBeUndefined();
  });

  it("keeps repo, rev, release and the engine table verbatim", () => {
    const text = [
      'engine = "dgpp"',
      'deploy = "native"',
      'model = "Qwen/Qwen3.8-27B"',
      "[dgpp]",
      'repo = "https://github.com/HawkBearPig/dgpp.git"',
      'rev = "3f2d7d7"',
      'dir = "/opt/dgpp"',
      "http_port = 18181",
      'release = "dgpp-0.4.1"',
      "[dgpp.engine]",
      'kv_cache_dtype = "fp8"',
      "max_num_seqs = 8",
      'speculative = { method = "mtp", k = 3 }',
      "",
    ].join("\n");
    expect(parseRecipe("recipes/d.toml", text).dgpp).toEqual({
      repo: "https://github.com/HawkBearPig/dgpp.git",
      rev: "3f2d7d7",
      dir: "/opt/dgpp",
      httpPort: 18181,
      release: "dgpp-0.4.1",
      engine: { kv_cache_dtype: "fp8", max_num_seqs: 8, speculative: { method: "mtp", k: 3 } },
    });
  });
});

describe("parseRecipe: an unknown engine", () => {
  it("falls back to the vLLM driver and says so in a warning", () => {
    const r = parseRecipe("recipes/trt.toml", `engine = "tensorrt-llm"\n${VLLM}`);
    expect(r.engine).toBe("vllm");
    expect(r.engineAsWritten).toBe("tensorrt-llm");
    expect(r.warnings.map(said)).toEqual([
      'recipes/trt.toml: engine "tensorrt-llm" is unknown; using the vLLM driver (known: vllm, sglang, gr8, dgpp)',
    ]);
  });

  it("applies the vLLM rules to the fallback (port is required)", () => {
    expect(() => parseRecipe("recipes/trt.toml", 'engine = "tensorrt-llm"\nmodel = "a/b"\nimage = "x/y:1"\n')).toThrow(
      "recipes/trt.toml:1:1: port: is required for this engine; add port = 8000 (or another free port)",
    );
  });

  it("gives no warning for the four known engines", () => {
    const known: Array<[string, string]> = [
      ["vllm", VLLM],
      ["sglang", 'model = "Qwen/Qwen3-8B"\nimage = "lmsysorg/sglang:v0.5.23-cu130"\nport = 30000\n'],
      ["gr8", 'model = "a/b"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\n'],
      ["dgpp", 'deploy = "native"\n[dgpp]\n'],
    ];
    for (const [engine, rest] of known) {
      const r = parseRecipe(`recipes/${engine}.toml`, `engine = "${engine}"\n${rest}`);
      expect([r.engine, r.warnings]).toEqual([engine, []]);
    }
  });
});

describe("the example recipes", () => {
  const files = readdirSync(RECIPES)
    .filter((f) => f.endsWith(".toml"))
    .sort();
  const read = (f: string): Recipe => parseRecipe(`recipes/${f}`, readFileSync(join(RECIPES, f), "utf8"));

  it("are the six recipes the goldens cover", () => {
    expect(files).toEqual([
      "glm53-full-tp4-gr8.toml",
      "qwen3-30b-sglang-tmux.toml",
      "qwen3-32b-vllm-tp2.toml",
      "qwen3-8b-solo.toml",
      "qwen38-27b-nvfp4-dgpp.toml",
      "qwen38-flash.toml",
    ]);
  });

  it.each(files)("%s parses without warnings", (f) => {
    const r = read(f);
    expect(r.name).toBe(f.replace(/\.toml$/, ""));
    expect(r.warnings).toEqual([]);
  });

  it("loadRecipes reads them all, by name", () => {
    const all = loadRecipes(RECIPES, "recipes");
    expect([...all.keys()]).toEqual(files.map((f) => f.replace(/\.toml$/, "")));
    expect(all.get("qwen38-flash")?.file).toBe("recipes/qwen38-flash.toml");
  });

  it("glm53-full-tp4-gr8 is gr8 in docker with tp 4, its hook and no port", () => {
    const r = read("glm53-full-tp4-gr8.toml");
    expect([r.engine, r.deploy, r.tp, r.port, r.image]).toEqual([
      "gr8",
      "docker",
      4,
      undefined,
      "ghcr.io/kindlingai/gr8:0.9.2",
    ]);
    expect(r.args).toEqual(["--model-cache", "/models", "--drafter", "mtp-k4", "--shape", "full"]);
    expect(r.hooks.beforeServe).toEqual(["sudo -n sysctl -w vm.compaction_proactiveness=0"]);
    expect(r.readiness.timeoutS).toBe(3600);
  });

  it("qwen38-27b-nvfp4-dgpp is dgpp native with a pinned repo and rev", () => {
    const r = read("qwen38-27b-nvfp4-dgpp.toml");
    expect([r.engine, r.deploy, r.port]).toEqual(["dgpp", "native", undefined]);
    expect(r.dgpp).toEqual({
      repo: "https://github.com/HawkBearPig/dgpp.git",
      rev: "v0.4.1",
      dir: "~/dgpp",
      httpPort: 18080,
      engine: { kv_cache_dtype: "fp8", max_num_seqs: 8, max_model_len: 131072 },
    });
  });

  it("qwen38-flash is a script recipe with its profiles directory", () => {
    const r = read("qwen38-flash.toml");
    expect([r.engine, r.deploy, r.profilesDir, r.model, r.port]).toEqual([
      "vllm",
      "script",
      "qwen38-flash/profiles",
      undefined,
      undefined,
    ]);
  });

  it("the tp 2 recipes name no interface: each node's nic does", () => {
    expect(read("qwen3-32b-vllm-tp2.toml").env).toEqual({ NCCL_IB_DISABLE: "0" });
    const s = read("qwen3-30b-sglang-tmux.toml");
    expect(s.env).toEqual({});
    expect([s.engine, s.deploy, s.tp, s.port, s.readiness.maxModelLen]).toEqual(["sglang", "tmux", 2, 30000, 65536]);
  });

  it("qwen3-8b-solo is vLLM in docker on one Spark, checked against the vLLM of its NGC image", () => {
    const r = read("qwen3-8b-solo.toml");
    expect([r.engine, r.deploy, r.tp, r.port, r.image, r.servedModelName]).toEqual([
      "vllm",
      "docker",
      1,
      8000,
      "nvcr.io/nvidia/vllm:26.01-py3",
      "qwen3-8b",
    ]);
    expect(r.optionsChecked).toBe("vllm serve 0.11.1 (nvcr.io/nvidia/vllm:26.01-py3: NGC vLLM release 26.01)");
  });
});
