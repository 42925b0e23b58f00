/**
 * Rendering a site: the cross-checks between the site and the recipes (exact messages, all at
 * once), and the properties of the rendered bundles that seed 000 requires of every engine.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes, parseRecipe } from "../src/engines/recipes";
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
  all.set(
    "x",
    parseRecipe(
      "recipes/x.toml",
      'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\ntp = 3\n',
    ),
  );
  all.set(
    "g3",
    parseRecipe(
      "recipes/g3.toml",
      'engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\ntp = 3\n',
    ),
  );
  all.set(
    "old",
    parseRecipe(
      "recipes/old.toml",
      'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\ntp = 2\n' +
        'entrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n',
    ),
  );
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

const KNOWN =
  "glm53-full-tp4-gr8, qwen3-30b-sglang-tmux, qwen3-32b-vllm-tp2, qwen3-8b-solo, qwen38-27b-nvfp4-dgpp, " +
  "qwen38-flash, x, g3, old";

describe("cross-checks of the deployments against the recipes", () => {
  type Case = [title: string, deployments: string, message: string];
  const cases: Case[] = [
    [
      "an unknown recipe",
      "    - { recipe: nope, nodes: [a1] }\n",
      `${F}:8:9: sm121:deployments[0].recipe: recipe "nope" is not in recipes/; ` +
        `use one of ${KNOWN} or add recipes/nope.toml`,
    ],
    [
      "a node in two deployments, one of them on two nodes",
      "    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2] }\n" +
        "    - { recipe: qwen3-30b-sglang-tmux, nodes: [a2, a3] }\n",
      `${F}:9:48: sm121:deployments[1].nodes[0]: node "a2" also serves deployment qwen3-32b-vllm-tp2, ` +
        "and qwen3-32b-vllm-tp2 runs on 2 nodes; a node shared by deployments serves one-node deployments only " +
        "(the ranks of a group meet on fixed ports); " +
        "give qwen3-32b-vllm-tp2 nodes of its own, or remove a2 from one of them",
    ],
    [
      "tp 3 on 4 nodes",
      "    - { recipe: x, nodes: [a1, a2, a3, a4] }\n",
      `recipes/x.toml:4:1: tp: tp = 3 starts 3 ranks, one per GPU, but deployment x (${F}:8) has 4 GPUs ` +
        "(4 nodes x 1 GPU; a DGX Spark has one GB10 unless the node sets gpus); " +
        "set tp = 4 in recipes/x.toml, or list 3 nodes in the deployment",
    ],
    [
      "tp 2 on 3 nodes",
      "    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2, a3] }\n",
      "recipes/qwen3-32b-vllm-tp2.toml:12:1: tp: tp = 2 starts 2 ranks, one per GPU, " +
        `but deployment qwen3-32b-vllm-tp2 (${F}:8) has 3 GPUs (3 nodes x 1 GPU; ` +
        "a DGX Spark has one GB10 unless the node sets gpus); " +
        "set tp = 3 in recipes/qwen3-32b-vllm-tp2.toml, or list 2 nodes in the deployment",
    ],
    [
      "tp 2 on one Spark",
      "    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1] }\n",
      "recipes/qwen3-32b-vllm-tp2.toml:12:1: tp: tp = 2 starts 2 ranks, one per GPU, " +
        `but deployment qwen3-32b-vllm-tp2 (${F}:8) has 1 GPU (1 node x 1 GPU; ` +
        "a DGX Spark has one GB10 unless the node sets gpus): the engine would stop at start with " +
        '"World size (2) is larger than the number of available GPUs"; ' +
        "set tp = 1 in recipes/qwen3-32b-vllm-tp2.toml, or list 2 nodes in the deployment",
    ],
    [
      "gr8 with tp 3 on 4 nodes",
      "    - { recipe: g3, nodes: [a1, a2, a3, a4] }\n",
      "recipes/g3.toml:4:1: tp: gr8 runs one rank per peer: tp = 3 in recipes/g3.toml but 4 nodes are listed; " +
        "list 3 nodes or set tp = 4",
    ],
    [
      "vLLM's old api_server entrypoint on 2 nodes",
      "    - { recipe: old, nodes: [a1, a2] }\n",
      'recipes/old.toml:5:1: entrypoint: vLLM\'s entrypoint "python3 -m vllm.entrypoints.openai.api_server" ' +
        "(recipes/old.toml) runs an API server on every rank; " +
        "it ignores --headless, so the 1 worker rank(s) would not join rank 0; " +
        'remove entrypoint (sm121 runs `vllm serve`), or set entrypoint = ["vllm", "serve"], ' +
        "or serve this recipe on one node",
    ],
    [
      "a profile on a docker recipe",
      "    - { recipe: qwen3-32b-vllm-tp2, profile: best, nodes: [a1, a2] }\n",
      `${F}:8:37: sm121:deployments[0].profile: profiles belong to script recipes; ` +
        'qwen3-32b-vllm-tp2 is deploy = "docker"; remove profile',
    ],
    [
      "an overlay on a docker recipe",
      "    - { recipe: qwen3-32b-vllm-tp2, overlay: ov, nodes: [a1, a2] }\n",
      `${F}:8:37: sm121:deployments[0].overlay: overlays apply to script recipes; remove overlay`,
    ],
    [
      "a script recipe without a profile",
      "    - { recipe: qwen38-flash, nodes: [a1] }\n",
      `${F}:8:7: sm121:deployments[0]: recipe qwen38-flash is a script recipe and needs a profile; ` +
        "add profile: <name> (a file in qwen38-flash/profiles)",
    ],
    [
      "a profile whose node recipe the node lacks",
      "    - { recipe: qwen38-flash, profile: best, nodes: [a1] }\n",
      `${F}:3:5: sm121:nodes.a1.recipes: profile best needs the node recipe "qwen38-flash" on a1; ` +
        "add recipes.qwen38-flash: {dir, container} to node a1",
    ],
  ];
  it.each(cases)("%s", (_, deployments, message) => expect(errorsOf(() => render(deployments))).toEqual([message]));

  it("lets one-node deployments share a node on ports of their own, and tells each bundle its neighbours", () => {
    const two = "    - { name: one, recipe: z, nodes: [a1] }\n" + "    - { name: two, recipe: y, nodes: [a1] }\n";
    const all = recipes();
    const y = (port: number) => `model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\nport = ${port}\n`;
    all.set("z", parseRecipe("recipes/z.toml", y(30000)));
    all.set("y", parseRecipe("recipes/y.toml", y(8001)));
    const bundles = renderSite(site(two), all, { root: ROOT });
    const seen = bundles.map((b) => [b.deployment, b.nodes[0]?.node, b.nodes[0]?.api?.port, b.nodes[0]?.neighbors]);
    expect(seen).toEqual([
      ["one", "a1", 30000, ["two"]],
      ["two", "a1", 8001, ["one"]],
    ]);
    all.set("y", parseRecipe("recipes/y.toml", y(30000)));
    expect(errorsOf(() => renderSite(site(two), all, { root: ROOT }))).toEqual([
      `${F}:9:39: sm121:deployments[1].nodes[0]: node "a1" serves deployments one and two, both on port 30000; ` +
        "give two another port (port in recipes/y.toml, or the node's PORT for a script recipe)",
    ]);
  });

  it("checkDeployments returns every error of every deployment at once", () => {
    const s = site(
      "    - { recipe: glm53-full-tp4-gr8, nodes: [a1, a2] }\n    - { recipe: x, nodes: [a3, a4] }\n" +
        "    - { recipe: nope, nodes: [a1] }\n",
    );
    expect(checkDeployments(s, recipes()).map((e) => e.message)).toEqual([
      "recipes/glm53-full-tp4-gr8.toml:7:1: tp: gr8 runs one rank per peer: " +
        "tp = 4 in recipes/glm53-full-tp4-gr8.toml but 2 nodes are listed; list 4 nodes or set tp = 2",
      `recipes/x.toml:4:1: tp: tp = 3 starts 3 ranks, one per GPU, but deployment x (${F}:9) has 2 GPUs ` +
        "(2 nodes x 1 GPU; a DGX Spark has one GB10 unless the node sets gpus): " +
        'the engine would stop at start with "World size (3) is larger than the number of available GPUs"; ' +
        "set tp = 2 in recipes/x.toml, or list 3 nodes in the deployment",
      `${F}:10:9: sm121:deployments[2].recipe: recipe "nope" is not in recipes/; ` +
        `use one of ${KNOWN} or add recipes/nope.toml`,
    ]);
  });

  it("renderSite throws the same list as one SpecErrors", () => {
    expect(
      errorsOf(() => render("    - { recipe: g3, nodes: [a1, a2] }\n    - { recipe: qwen38-flash, nodes: [a3] }\n")),
    ).toEqual([
      "recipes/g3.toml:4:1: tp: gr8 runs one rank per peer: tp = 3 in recipes/g3.toml but 2 nodes are listed; " +
        "list 3 nodes or set tp = 2",
      `${F}:9:7: sm121:deployments[1]: recipe qwen38-flash is a script recipe and needs a profile; ` +
        "add profile: <name> (a file in qwen38-flash/profiles)",
    ]);
  });

  it("accepts tp x pp equal to the GPUs: one GB10 per node, or the node's gpus", () => {
    expect(checkDeployments(site("    - { recipe: x, nodes: [a1, a2, a3] }\n"), recipes())).toEqual([]);
    expect(checkDeployments(site("    - { recipe: qwen3-32b-vllm-tp2, nodes: [a1, a2] }\n"), recipes())).toEqual([]);
    const two = parseSite(
      F,
      "s",
      "config:\n  sm121:nodes:\n    b1: { host: local, ip: 203.0.113.9, gpus: 2 }\n  sm121:deployments:\n" +
        "    - { recipe: qwen3-32b-vllm-tp2, nodes: [b1] }\n",
    );
    expect(checkDeployments(two, recipes())).toEqual([]);
  });

  it("refuses a multi-node vLLM whose image's vLLM has no --nnodes (NGC 25.10 carries vLLM 0.10.2)", () => {
    const r = recipes();
    r.set(
      "ngc2510",
      parseRecipe(
        "recipes/ngc2510.toml",
        'model = "Q/q"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\ntp = 2\n',
      ),
    );
    expect(checkDeployments(site("    - { recipe: ngc2510, nodes: [a1, a2] }\n"), r).map((e) => e.message)).toEqual([
      "recipes/ngc2510.toml:2:1: image: vLLM 0.10.2 has no --nnodes, --node-rank, --master-addr, --master-port, " +
        'which sm121\'s launch on 2 nodes passes: it would stop at start with "unrecognized arguments"; ' +
        "serve it on one node, or use an image with vLLM 0.11.1 or newer (image in recipes/ngc2510.toml)",
    ]);
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
    expect(
      b?.nodes[1]?.argv.slice(b.nodes[1].argv.indexOf("--master-addr"), b.nodes[1].argv.indexOf("--master-addr") + 2),
    ).toEqual(["--master-addr", "203.0.113.3"]);
  });

  it("SGLang: SGLANG_HOST_IP (and seed 000's SGLANG_WORKER_IP) on every node, and no VLLM_HOST_IP", () => {
    const [b] = render("    - { recipe: qwen3-30b-sglang-tmux, nodes: [a1, a2] }\n");
    expect(b?.nodes.map((n) => [n.env["SGLANG_HOST_IP"], n.env["SGLANG_WORKER_IP"], n.env["VLLM_HOST_IP"]])).toEqual([
      ["203.0.113.1", "203.0.113.1", undefined],
      ["203.0.113.2", "203.0.113.2", undefined],
    ]);
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
      [
        true,
        ["scripts/dgpp-cluster", "up", "--config", "~/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json"],
        "http://203.0.113.1:18080",
      ],
      [false, [], undefined],
    ]);
    // The memory tripwire beside the manager where it runs (rank 0): the other ranks run no process of sm121's.
    const files = ["~/dgpp/sm121-qwen38-27b-nvfp4-dgpp.json", "~/dgpp/.env"];
    const tripwire = "~/.sm121/deployments/qwen38-27b-nvfp4-dgpp/tripwire.sh";
    expect(b?.nodes.map((n) => n.files.map((f) => f.path))).toEqual([[...files, tripwire], files]);
    expect(b?.nodes[1]?.start).toBe(":");
  });

  it("the readiness timeout adds the site's grace to the recipe's timeout", () => {
    const bs = render("    - { recipe: glm53-full-tp4-gr8, nodes: [a1, a2, a3, a4] }\n");
    expect(bs[0]?.readiness.timeoutS).toBe(3600 + 300);
  });
});

describe("the example site", () => {
  const text = readFileSync(join(ROOT, "Pulumi.spark-site.yaml"), "utf8");

  it("renders its one deployment, on one Spark, with no gateway", () => {
    const s = parseSite("Pulumi.spark-site.yaml", "spark-site", text);
    expect(
      renderSite(s, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT }).map((b) => [
        b.deployment,
        b.nodes.map((n) => n.node),
      ]),
    ).toEqual([["qwen3-8b-solo", ["spark1"]]]);
    expect(s.gateway).toBeUndefined();
    expect(Object.keys(s.nodes)).toEqual(["spark1", "spark2"]);
  });

  // The file lists alternatives in comments; each one must render as written.
  const alternatives = [...text.matchAll(/^ {4}# (- \{ recipe: .*\})$/gm)].map((m) => m[1] ?? "");
  it("lists the three alternatives", () => expect(alternatives).toHaveLength(3));

  it.each(alternatives)("renders the alternative %s", (alt) => {
    const swapped = text.replace(/ {4}- \{ recipe: qwen3-8b-solo, nodes: \[spark1\] \}\n/, `    ${alt}\n`);
    expect(swapped).not.toBe(text);
    const s = parseSite("Pulumi.spark-site.yaml", "spark-site", swapped);
    expect(renderSite(s, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT })).toHaveLength(1);
  });
});

describe("script recipes (seed 001) on the examples site", () => {
  const bundles = renderSite(
    readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml"),
    loadRecipes(join(ROOT, "recipes"), "recipes"),
    { root: ROOT },
  );
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
    expect(flash("best").readiness.proofs.filter((p) => p === "MTP draft head: FP8 rowwise copy engaged")).toHaveLength(
      1,
    );
    expect(flash("datagen").readiness.proofs).not.toContain("MTP draft head: FP8 rowwise copy engaged");
  });

  it("serves where BIND and PORT say, with READY_TIMEOUT_S plus the grace", () => {
    expect(
      ["best", "datagen", "capture"].map((p) => [flash(p).nodes[0]?.api?.url, flash(p).readiness.timeoutS]),
    ).toEqual([
      ["http://198.51.100.11:8000", 2100],
      ["http://127.0.0.1:8000", 2100],
      ["http://198.51.100.13:8001", 2100],
    ]);
  });
});

describe("the HF cache of a node", () => {
  const withCache = (modelCache: string) =>
    parseSite(
      F,
      "s",
      `config:\n  sm121:modelCache: ${modelCache}\n  sm121:nodes:\n` +
        "    a1: { host: local, ip: 203.0.113.1, env: { HF_HOME: ~/.cache/huggingface } }\n  sm121:deployments:\n" +
        "    - { recipe: r, nodes: [a1] }\n",
    );
  const render1 = (recipeEnv: string, modelCache = "off") => {
    const r = new Map([
      [
        "r",
        parseRecipe(
          "recipes/r.toml",
          `model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n${recipeEnv}`,
        ),
      ],
    ]);
    const [b] = renderSite(withCache(modelCache), r, { root: ROOT });
    const n = b?.nodes[0];
    if (n === undefined) throw new Error("no bundle");
    return n;
  };

  it("that the engine fills is made by the up (~ expanded on the node), not refused when missing", () => {
    const n = render1("");
    expect(n.mkdirs).toEqual(["~/.cache/huggingface"]);
    expect(n.preflight.filter((c) => c.subject === "~/.cache/huggingface").map((c) => [c.kind, c.fatal])).toEqual([
      ["file", false],
    ]);
  });

  it("that nothing fills (the engine offline, no ModelCache) is checked by every plan, and missing is fatal", () => {
    const n = render1('[env]\nHF_HUB_OFFLINE = "1"\n');
    expect(n.mkdirs).toEqual([]);
    const check = n.preflight.find((c) => c.kind === "dir" && c.subject === "~/.cache/huggingface");
    expect(check).toMatchObject({ fatal: true, atPlan: true });
    expect(check?.why).toContain("which nothing in this up fills");
    // ModelCache copies the model in: the up makes the directory.
    expect(render1('[env]\nHF_HUB_OFFLINE = "1"\n', "keep").mkdirs).toEqual(["~/.cache/huggingface"]);
  });

  it("refuses ~ for a script recipe, whose start.sh reads the .env as written", () => {
    const text =
      "config:\n  sm121:nodes:\n    a1: { host: local, ip: 203.0.113.1, env: { HF_HOME: ~/.cache/hf, BIND: " +
      "127.0.0.1, PORT: 8000 }, recipes: { qwen38-flash: { dir: /r, container: q } }, vars: { tritonCache: /t, " +
      "mtpShardR2: /m } }\n  sm121:deployments:\n    - { recipe: qwen38-flash, profile: datagen, nodes: [a1] }\n";
    expect(errorsOf(() => renderSite(parseSite(F, "s", text), recipes(), { root: ROOT }))).toEqual([
      `${F}:3:48: sm121:nodes.a1.env.HF_HOME: node a1 runs the script recipe qwen38-flash, ` +
        "whose start.sh reads HF_HOME from the .env as written, where ~ is not expanded; " +
        "write the absolute path, e.g. /home/<user>/.cache/huggingface (sm121 init writes each node's)",
    ]);
  });
});
