/**
 * What a deployment's ModelCache and ImageSync carry (components/sync), decided at plan time from
 * the examples site, and the transfer progress lines (serve/fanout's meter).
 */
import { cpSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { imageSyncOf, modelSyncOf } from "../src/plan/sync";
import { recipeRevision } from "../src/engines/options/recipe";
import type { EngineName } from "../src/recipe/types";
import { loadProject } from "../src/project";
import { meter, rateText } from "../src/serve/fanout";
import { protectedReplacements } from "../src/serve/imagesync";
import { matching } from "./helpers/json";
import { testDir } from "./helpers/tmp";

const REPO = resolve(__dirname, "..");

function project(extra: string, recipeEdit: (t: string) => string = (t) => t) {
  const dir = testDir("sm121-sync-");
  cpSync(join(REPO, "recipes"), join(dir, "recipes"), { recursive: true });
  const tp2 = join(dir, "recipes", "qwen3-32b-vllm-tp2.toml");
  writeFileSync(tp2, recipeEdit(readFileSync(tp2, "utf8")));
  cpSync(join(REPO, "test", "fixtures", "overlays", "mtp-r3"), join(dir, "overlays", "mtp-r3"), { recursive: true });
  const site = readFileSync(join(REPO, "test", "fixtures", "sites", "examples.yaml"), "utf8").replace(
    "  sm121:nodes:",
    `${extra}  sm121:nodes:`,
  );
  writeFileSync(join(dir, "Pulumi.ex.yaml"), site);
  const p = loadProject(dir, "ex");
  const of = (recipe: string) => {
    const b = p.bundles.find((d) => d.recipe === recipe);
    if (b === undefined) throw new Error(`no deployment of ${recipe}`);
    return {
      model: modelSyncOf(p.site, p.recipes.get(recipe), b),
      image: imageSyncOf(p.site, p.recipes.get(recipe), b),
      b,
    };
  };
  return of;
}

describe("the model and image of a deployment", () => {
  it("are left alone unless the site asks (sm121:modelCache, sm121:imageSync)", () => {
    const { model, image } = project("")("qwen3-32b-vllm-tp2");
    expect(model).toBeUndefined();
    expect(image).toBeUndefined();
  });

  it("carry the repo, the recipe's --revision pin, every node's HF_HOME in rank order, and the docker image", () => {
    const of = project("  sm121:modelCache: remove\n  sm121:imageSync: true\n", (t) =>
      t.replace('"--enable-prefix-caching"]', '"--enable-prefix-caching", "--revision", "v1.1"]'),
    );
    const { model, image, b } = of("qwen3-32b-vllm-tp2");
    expect(model).toMatchObject({ repo: "Qwen/Qwen3-32B", revision: "v1.1", onDelete: "remove", protectedNodes: [] });
    expect(model?.nodes.map((n) => [n.node, n.hfHome, n.ip])).toEqual(
      b.nodes.map((n) => [n.node, matching(/^\//), n.ip]),
    );
    expect(image).toEqual({
      image: "nvcr.io/nvidia/vllm:26.01-py3",
      nodes: b.nodes.map((n) => ({
        node: n.node,
        conn: n.conn,
        ip: n.ip,
        stateDir: n.stateDir,
        protected: n.protected,
      })),
    });
    // A tmux recipe has no image to carry; its model still goes to every node, unpinned.
    const sglang = of("qwen3-30b-sglang-tmux");
    expect(sglang.image).toBeUndefined();
    expect(sglang.model?.revision).toBe("main");
  });

  it("read the pin as the engines do: --revision X, --revision=X, a unique prefix, the last one", () => {
    const image = "vllm/vllm-openai:v0.11.1";
    const vllm = (args: string[], engine: EngineName = "vllm") =>
      recipeRevision({ engine, args, image, file: "r.toml" });
    expect(vllm(["--max-model-len", "4096", "--revision", "abc"])).toBe("abc");
    const commit = "0123456789abcdef0123456789abcdef01234567";
    expect(vllm([`--revision=${commit}`])).toBe(commit);
    expect(vllm(["--tokenizer-revision", "x"])).toBeUndefined();
    // argparse takes a unique prefix of a long option: vLLM loads revision abc.
    expect(vllm(["--revis", "abc"])).toBe("abc");
    expect(vllm(["--revis=abc", "--revision", "def"])).toBe("def");
    // A value that looks like an option is another option's, not the revision.
    expect(vllm(["--served-model-name", "--revision"])).toBeUndefined();
    expect(vllm(["--revis", "abc"], "sglang")).toBe("abc");
    // gr8 has no option table: its flags are read as written, as its owned flags are checked.
    expect(vllm(["--revision", "abc"], "gr8")).toBe("abc");
    expect(vllm(["--revis", "abc"], "gr8")).toBeUndefined();
  });

  it("carry the revision of `--revis abc` to the model cache and the HF-cache check, as vLLM would load it", () => {
    const pin = (t: string) => t.replace('"--enable-prefix-caching"]', '"--enable-prefix-caching", "--revis", "abc"]');
    const of = project("  sm121:modelCache: keep\n", pin);
    const { model, b } = of("qwen3-32b-vllm-tp2");
    expect(model?.revision).toBe("abc");
    const check = b.nodes[0]?.preflight.find((c) => c.kind === "hf-cache");
    expect(check?.model).toEqual({ repo: "Qwen/Qwen3-32B", revision: "abc" });
  });
});

describe("transfer progress", () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it("says the bytes so far, of the total, the rate and the ETA, every period until stopped", async () => {
    vi.useFakeTimers();
    const lines: string[] = [];
    let done = 0;
    const stop = meter(
      "copy to m2",
      () => Promise.resolve(done),
      4 * 1024 ** 3,
      (m) => lines.push(m),
      10,
    );
    done = 1024 ** 3;
    await vi.advanceTimersByTimeAsync(10_000);
    expect(lines).toEqual(["copy to m2: 1.0 GiB of 4.0 GiB in 10 s (102.4 MiB/s, ETA 30 s)"]);
    stop();
    await vi.advanceTimersByTimeAsync(30_000);
    expect(lines).toHaveLength(1);
    expect(rateText(3 * 1024 ** 2, 1500)).toBe("3.0 MiB in 1.5 s (2.0 MiB/s)");
  });
});

describe("ImageSync on a protected node", () => {
  const node = (name: string, prot: boolean) => ({
    node: name,
    conn: { kind: "ssh" as const, host: name, port: 22, user: "u" },
    ip: "10.0.0.1",
    stateDir: "~/.sm121",
    protected: prot,
  });
  const spec = (allowed: string[]) => ({
    deployment: "d",
    image: "img:1",
    nodes: [node("a", false), node("p", true)],
    allowed,
  });
  const want = "sha256:aaaaaaaaaaaaaaaaaaaaaaaa";
  const other = "sha256:bbbbbbbbbbbbbbbbbbbbbbbb";

  it("refuses to replace another build on a protected node without the run's allowance", () => {
    expect(protectedReplacements(spec([]), [want, other], want)).toBe(
      "node p is protected and holds another build of img:1 (sha256:bbbbbbbbbbbb); " +
        "this run would replace it with sha256:aaaaaaaaaaaa; run with SM121_ALLOW_PROTECTED=p to allow it",
    );
  });

  it(
    "allows it with SM121_ALLOW_PROTECTED, and a copy onto a protected node that lacks the image, " +
      "or holds the same build",
    () => {
      expect(protectedReplacements(spec(["p"]), [want, other], want)).toBeUndefined();
      expect(protectedReplacements(spec([]), [want, undefined], want)).toBeUndefined();
      expect(protectedReplacements(spec([]), [other, want], want)).toBeUndefined();
    },
  );
});
