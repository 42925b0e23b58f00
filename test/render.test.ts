/**
 * Rendering a site: the cross-checks between the site and the recipes (exact messages, all at
 * once), and the properties of the rendered bundles that seed 000 requires of every engine.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes, parseRecipe } from "../src/recipe/recipe";
import { parseSite, readSite } from "../src/recipe/site";
import type { Recipe } from "../src/recipe/types";
import { checkDeployments } from "../src/render/checks";
import { renderSite } from "../src/render/deployment";
import type { DeploymentBundle } from "../src/render/types";
import { errorsOf } from "./helpers/spec";

const ROOT = join(__dirname, "..");
const F = "Pulumi.s.yaml";

function recipes(): Map<string, Recipe> {
  const all = loadRecipes(join(ROOT, "recipes"), "recipes");
  all.set("x", parseRecipe("recipes/x.toml", 'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\ntp = 3\n'));
  all.set("g3", parseRecipe("recipes/g3.toml", 'engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\ntp = 3\n'));
  all.set("old", parseRecipe("recipes/old.toml", 'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\ntp = 2\nentrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n'));
  return all;
}

/** Four local nodes on lines 3-6; the deployments start on line 8. */
const NODES = [
  "config:",
  "  sm121:nodes:",
  "    a1: { host: local, ip: 203.0.113.1 }",
  "    a2: { host: local, ip: 203.0.113.2 }",
  "    a3: { host: local, ip: 203.0.113.3 }",
  "    a4: { host: local, ip: 203.0.113.4 }",
  "  sm121:deployments:",
  "",
].join("\n");

const site = (deployments: string) => parseSite(F, "s", NODES + deployments);
const render = (deployments: string): DeploymentBundle[] => renderSite(site(deployments), recipes(), { root: ROOT });


const KNOWN = "glm53-full-tp4-gr8, qwen3-30b-sglang-tmux, qwen3-32b-vllm-tp2, qwen38-27b-nvfp4-dgpp, qwen38-flash, x, g3, old";

describe("cross-checks of the deployments against the recipes", () => {
  type Case = [title: string, deployments: string, message: string];
  const cases: Case[] = [
    ["an unknown recipe", "    - { recipe: nope, nodes: [a1] }\n", `${F}:8:9: sm121:deployments[0].recipe: recipe "nope" is not in recipes/; use one of ${KNOWN} or add recipes/nope.toml`],
    ["a node in two deployments", "    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2] }\n    - { recipe: qwen3-30b-sglang-tmux, nodes: [a2, a3] }\n", `${F}:9:48: sm121:deployments[1].nodes[0]: node "a2" already serves deployment qwen3-32b-vllm-tp2; a node serves one deployment; remove it from one of the two deployments`],
    ["tp 3 on 4 nodes", "    - { recipe: x, nodes: [a1, a2, a3, a4] }\n", `${F}:8:20: sm121:deployments[0].nodes: tp = 3 (recipes/x.toml) does not divide the 4 launch nodes; use 1, 2 or 4`],
    ["tp 2 on 3 nodes", "    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2, a3] }\n", `${F}:8:37: sm121:deployments[0].nodes: tp = 2 (recipes/qwen3-32b-vllm-tp2.toml) does not divide the 3 launch nodes; use 1 or 3`],
    ["gr8 with tp 3 on 4 nodes", "    - { recipe: g3, nodes: [a1, a2, a3, a4] }\n", `${F}:8:21: sm121:deployments[0].nodes: gr8 runs one rank per peer: tp = 3 in recipes/g3.toml but 4 nodes are listed; list 3 nodes or set tp = 4`],
    ["vLLM's old api_server entrypoint on 2 nodes", "    - { recipe: old, nodes: [a1, a2] }\n", `${F}:8:22: sm121:deployments[0].nodes: vLLM's entrypoint "python3 -m vllm.entrypoints.openai.api_server" (recipes/old.toml) runs an API server on every rank; it ignores --headless, so the 1 worker rank(s) would not join rank 0; remove entrypoint (sm121 runs \`vllm serve\`), or set entrypoint = ["vllm", "serve"], or serve this recipe on one node`],
    ["a profile on a docker recipe", "    - { recipe: qwen3-32b-vllm-tp2, profile: best, nodes: [a1, a2] }\n", `${F}:8:37: sm121:deployments[0].profile: profiles belong to script recipes; qwen3-32b-vllm-tp2 is deploy = "docker"; remove profile`],
    ["an overlay on a docker recipe", "    - { recipe: qwen3-32b-vllm-tp2, overlay: ov, nodes: [a1, a2] }\n", `${F}:8:37: sm121:deployments[0].overlay: overlays apply to script recipes; remove overlay`],
    ["a script recipe without a profile", "    - { recipe: qwen38-flash, nodes: [a1] }\n", `${F}:8:7: sm121:deployments[0]: recipe qwen38-flash is a script recipe and needs a profile; add profile: <name> (a file in qwen38-flash/profiles)`],
    ["a profile whose node recipe the node lacks", "    - { recipe: qwen38-flash, profile: best, nodes: [a1] }\n", `${F}:3:5: sm121:nodes.a1.recipes: profile best needs the node recipe "qwen38-flash" on a1; add recipes.qwen38-flash: {dir, container} to node a1`],
  ];
  it.each(cases)("%s", (_, deployments, message) => expect(errorsOf(() => render(deployments))).toEqual([message]));

  it("checkDeployments returns every error of every deployment at once", () => {
    const s = site("    - { recipe: glm53-full-tp4-gr8, nodes: [a1, a2] }\n    - { recipe: x, nodes: [a3, a4] }\n    - { recipe: nope, nodes: [a1] }\n");
    expect(checkDeployments(s, recipes()).map((e) => e.message)).toEqual([
      `${F}:8:37: sm121:deployments[0].nodes: gr8 runs one rank per peer: tp = 4 in recipes/glm53-full-tp4-gr8.toml but 2 nodes are listed; list 4 nodes or set tp = 2`,
      `${F}:9:20: sm121:deployments[1].nodes: tp = 3 (recipes/x.toml) does not divide the 2 launch nodes; use 1 or 2`,
      `${F}:10:9: sm121:deployments[2].recipe: recipe "nope" is not in recipes/; use one of ${KNOWN} or add recipes/nope.toml`,
    ]);
  });

  it("renderSite throws the same list as one SpecErrors", () => {
    expect(errorsOf(() => render("    - { recipe: g3, nodes: [a1, a2] }\n    - { recipe: qwen38-flash, nodes: [a3] }\n"))).toEqual([
      `${F}:8:21: sm121:deployments[0].nodes: gr8 runs one rank per peer: tp = 3 in recipes/g3.toml but 2 nodes are listed; list 3 nodes or set tp = 2`,
      `${F}:9:7: sm121:deployments[1]: recipe qwen38-flash is a script recipe and needs a profile; add profile: <name> (a file in qwen38-flash/profiles)`,
    ]);
  });

  it("accepts a tp that divides the nodes, or that the nodes divide", () => {
    expect(checkDeployments(site("    - { recipe: x, nodes: [a1, a2, a3] }\n"), recipes())).toEqual([]);
    expect(checkDeployments(site("    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2, a3, a4] }\n"), recipes())).toEqual([]);
  });
});

describe("rendered bundles keep seed 000's per-engine contract", () => {
  it("vLLM: VLLM_HOST_IP is each node's ip; only rank 0 has an API endpoint", () => {
    const [b] = render("    - { recipe: qwen3-32b-vllm-tp2, nodes: [a3, a1] }\n");
    expect(b?.nodes.map((n) => [n.node, n.rank, n.env["VLLM_HOST_IP"], n.api?.url])).toEqual([
      ["a3", 0, "203.0.113.3", "http://203.0.113.3:8000"],
      ["a1", 1, "203.0.113.1", undefined],
    ]);
    expect(b?.nodes[1]?.argv).toContain("--headless");
    expect(b?.nodes[1]?.argv.slice(b.nodes[1].argv.indexOf("--master-addr"), b.nodes[1].argv.indexOf("--master-addr") + 2)).toEqual(["--master-addr", "203.0.113.3"]);
  });

  it("SGLang: SGLANG_HOST_IP (and seed 000's SGLANG_WORKER_IP) on every node, and no VLLM_HOST_IP", () => {
    const [b] = render("    - { recipe: qwen3-30b-sglang-tmux, nodes: [a1, a2] }\n");
    expect(b?.nodes.map((n) => [n.env["SGLANG_HOST_IP"], n.env["SGLANG_WORKER_IP"], n.env["VLLM_HOST_IP"]])).toEqual([["203.0.113.1", "203.0.113.1", undefined], ["203.0.113.2", "203.0.113.2", undefined]]);
  });

  it("gr8: the API is :8100 on the first peer, and no engine IP env", () => {
    const [b] = render("    - { recipe: glm53-full-tp4-gr8, nodes: [a2, a1, a3, a4] }\n");
    expect(b?.nodes.map((n) => n.api?.url)).toEqual(["http://203.0.113.2:8100", undefined, undefined, undefined]);
    for (const n of b?.nodes ?? []) {
      expect(Object.keys(n.env)).toEqual([]);
      expect(n.argv).toContain("203.0.113.2,203.0.113.1,203.0.113.3,203.0.113.4");
    }
  });

  it("DGPP: head-coordinated, rank 0 alone runs dgpp-cluster up; every node gets the JSON and .env", () => {
    const [b] = render("    - { recipe: qwen38-27b-nvfp4-dgpp, nodes: [a1, a2] }\n");
    expect(b?.shape).toBe("head-coordinated");
    expect(b?.nodes.map((n) => [n.runs, n.argv, n.api?.url])).toEqual([
      [true, ["scripts/dgpp-cluster", "up", "--config", "~/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json"], "http://203.0.113.1:18080"],
      [false, [], undefined],
    ]);
    for (const n of b?.nodes ?? []) expect(n.files.map((f) => f.path)).toEqual(["~/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json", "~/dgpp/.env"]);
    expect(b?.nodes[1]?.start).toBe(":");
  });

  it("the readiness timeout adds the site's grace to the recipe's timeout", () => {
    const bs = render("    - { recipe: glm53-full-tp4-gr8, nodes: [a1, a2, a3, a4] }\n");
    expect(bs[0]?.readiness.timeoutS).toBe(3600 + 300);
  });
});

describe("the example site", () => {
  const text = readFileSync(join(ROOT, "Pulumi.spark-site.yaml"), "utf8");

  it("renders its one deployment", () => {
    const s = parseSite("Pulumi.spark-site.yaml", "spark-site", text);
    expect(renderSite(s, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT }).map((b) => b.deployment)).toEqual(["glm53-full-tp4-gr8"]);
  });

  // The file lists alternatives in comments; each one must render as written.
  const alternatives = [...text.matchAll(/^ {4}# (- \{ recipe: .*\})$/gm)].map((m) => m[1] ?? "");
  it("lists the four alternatives", () => expect(alternatives).toHaveLength(4));

  it.each(alternatives)("renders the alternative %s", (alt) => {
    const swapped = text.replace(/ {4}- recipe: glm53-full-tp4-gr8\n {6}nodes: \[spark1, spark2, spark3, spark4\]\n/, `    ${alt}\n`);
    expect(swapped).not.toBe(text);
    const s = parseSite("Pulumi.spark-site.yaml", "spark-site", swapped);
    expect(renderSite(s, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT })).toHaveLength(1);
  });
});

describe("script recipes (seed 001) on the examples site", () => {
  const bundles = renderSite(readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml"), loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
  const flash = (profile: string): DeploymentBundle => {
    const b = bundles.find((x) => x.deployment === `qwen38-flash-${profile}`);
    if (b === undefined) throw new Error(`no deployment qwen38-flash-${profile}`);
    return b;
  };

  it("creates the mkdir directories before it needs them, so they are no fatal preflight check", () => {
    // Preflight runs before the mkdir step: a fatal check on a directory that up creates would
    // stop the first up on a fresh node (the triton cache, the capture directory).
    for (const p of ["best", "datagen", "capture"]) {
      const n = flash(p).nodes[0];
      const fatal = new Set(n?.preflight.filter((c) => c.fatal).map((c) => c.subject));
      expect(n?.mkdirs.filter((d) => fatal.has(d))).toEqual([]);
    }
  });

  it("waits for each proof once", () => {
    for (const p of ["best", "datagen", "capture"]) {
      const proofs = flash(p).readiness.proofs;
      expect(proofs).toEqual([...new Set(proofs)]);
    }
  });

  it("does not wait for the FP8 draft head proof on datagen, which runs the stock MTP head", () => {
    expect(flash("best").readiness.proofs.filter((p) => p === "MTP draft head: FP8 rowwise copy engaged")).toHaveLength(1);
    expect(flash("datagen").readiness.proofs).not.toContain("MTP draft head: FP8 rowwise copy engaged");
  });

  it("serves where BIND and PORT say, with READY_TIMEOUT_S plus the grace", () => {
    expect(["best", "datagen", "capture"].map((p) => [flash(p).nodes[0]?.api?.url, flash(p).readiness.timeoutS])).toEqual([
      ["http://198.51.100.11:8000", 2100],
      ["http://127.0.0.1:8000", 2100],
      ["http://198.51.100.13:8001", 2100],
    ]);
  });
});
