/**
 * Seed 001 end to end: the qwen38-flash script recipe with profiles through the real Pulumi CLI.
 * A profile change is named key by key in the preview and applied with a backup; a hand edit is
 * found by refresh and repaired by up; HF_TOKEN in the old .env is carried over, never printed.
 */
import { existsSync, readdirSync, readFileSync, renameSync, writeFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { waitFor } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineProofs, type SimNode, type SimSite } from "../site/site";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);
/** The script recipe's engine and the docker one, both bound to 127.0.0.1. */
const FLASH_PORT = AT.port(0);
const SOLO_PORT = AT.port(1);

const RECIPE_DIR = "spark-recipes/qwen38-flash";
const SOLO =
  'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "solo"\n' +
  `image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = ${SOLO_PORT}\n`;

function stackYaml(
  site: SimSite,
  profile: string,
  deployment = `{ name: flash, recipe: qwen38-flash, profile: ${profile}, nodes: [spark1] }`,
): string {
  const extra = (n: SimNode) =>
    [
      `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38, mtpShardR2: ${n.home}/models/qwen38-mtp-r2, ` +
        `captureDir: ${n.home}/capture }`,
      `      recipes:`,
      `        qwen38-flash: { dir: ~/${RECIPE_DIR}, container: qwen38-flash, ownedMounts: [/recipe/files, ` +
        `/recipe/mtp_draft_vocab.json] }`,
    ].join("\n");
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    nodesYaml(site, extra, () => ({ BIND: "127.0.0.1", PORT: String(FLASH_PORT) })),
    "  sm121:deployments:",
    `    - ${deployment}`,
    "",
  ].join("\n");
}

// The tests run in order on one site, each from the state the one before left.
describe.sequential("the qwen38-flash script recipe through pulumi up", () => {
  let e: E2E;
  let node: SimNode;
  let envFile: string;
  const sh = async (script: string) => (await sshScript(e.site, node, script)).stdout;

  beforeAll(async () => {
    e = await e2eProject({
      name: "script",
      nodes: ["spark1"],
      ...AT.site(),
      config: () => "",
      recipes: { "solo.toml": SOLO },
    });
    node = e.site.nodes[0] as SimNode;
    makeScriptRecipe(node, RECIPE_DIR);
    mkdirSync(join(node.home, "models", "qwen38-mtp-r2"), { recursive: true });
    setEngineProofs(node, ["MTP draft head: FP8 rowwise copy engaged"]);
    envFile = join(node.home, RECIPE_DIR, ".env");
    // An operator's old .env with the secret that must survive every render.
    writeFileSync(envFile, 'MAX_NUM_SEQS="2"\nHF_TOKEN="hf_secret_e2e_do_not_print"\n');
    e.writeStack(stackYaml(e.site, "best"));
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves the best profile: header, identity, proofs, the old HF_TOKEN kept", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).not.toContain("hf_secret_e2e_do_not_print");
    const env = readFileSync(envFile, "utf8");
    expect(env).toMatch(
      new RegExp(
        "^# sm121-profile: best\n# sm121-node: spark1\n# sm121-recipe: qwen38-flash\n# sm121-overlay: none\n" +
          String.raw`# sm121-rendered: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ\n# sm121-sha256: [0-9a-f]{64}\n`,
      ),
    );
    expect(env).toContain('MAX_NUM_SEQS="4"');
    expect(env.trimEnd().split("\n").pop()).toBe('HF_TOKEN="hf_secret_e2e_do_not_print"');
    expect(existsSync(join(node.home, ".cache", "triton-qwen38"))).toBe(true); // the mkdir directive
    const backups = readdirSync(join(node.home, RECIPE_DIR)).filter((f) => f.startsWith(".env.sm121-bak-"));
    expect(backups).toHaveLength(1);
    expect(readFileSync(join(node.home, RECIPE_DIR, backups[0] ?? ""), "utf8")).toBe(
      'MAX_NUM_SEQS="2"\nHF_TOKEN="hf_secret_e2e_do_not_print"\n',
    );
    const models = JSON.parse(await sh(`curl -s http://127.0.0.1:${FLASH_PORT}/v1/models`)) as {
      data: Array<{ id: string; max_model_len: number }>;
    };
    expect(models.data[0]).toMatchObject({ id: "qwen38", max_model_len: 524288 });
    const logs = readdirSync(join(node.home, RECIPE_DIR, "logs")).filter((f) => f.startsWith("sm121-up-"));
    expect(logs).toHaveLength(1);
  });

  it("does nothing on a second up: same start time, no new backup", async () => {
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    // The stack, the provider host, the Site, the Deployment and its engine.
    expect(up.all).toMatch(/\b5 unchanged\b/);
    expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).toBe(started);
    expect(readdirSync(join(node.home, RECIPE_DIR)).filter((f) => f.startsWith(".env.sm121-bak-"))).toHaveLength(1);
  });

  it("checks a new proof text on the running engine, restarting nothing (seed 001's .env identity)", async () => {
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash");
    const profile = join(e.dir, "recipes", "qwen38-flash", "profiles", "best.env");
    const text = readFileSync(profile, "utf8");
    writeFileSync(profile, text.replace("# sm121-proof: ", "# sm121-proof: MTP K=7 engaged\n# sm121-proof: "));
    try {
      const up = await e.up();
      expect(up.code, up.all).toBe(0);
      expect(up.all).toContain("sm121: flash: checks, does not restart: the proofs");
      // Verify ran on the running engine: the new proof was looked for in its log.
      expect(up.all).toContain('spark1: proof not found in the log: "MTP K=7 engaged"');
      expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).toBe(started);
    } finally {
      writeFileSync(profile, text);
    }
    expect((await e.up()).code).toBe(0);
    expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).toBe(started);
  });

  it("restarts when a file start.sh mounts itself is rebuilt by rename (docker inspect's Mounts)", async () => {
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash");
    const patch = join(node.home, RECIPE_DIR, "patches", "mtp.py");
    // Change times count in whole seconds (the rule allows the start's own second).
    await waitFor("the second after the engine's start", () => Date.now() >= Date.parse(started.trim()) + 2000);
    // A rebuild writes a new file and renames it over the old one: the container keeps the old inode.
    writeFileSync(`${patch}.new`, `${readFileSync(patch, "utf8")}# rebuilt\n`);
    renameSync(`${patch}.new`, patch);
    const plan = await e.preview();
    expect(plan.code, plan.all).toBe(0);
    const words = `spark1: changed after the engine started: ${patch} (a running engine keeps the old file)`;
    expect(plan.all).toContain(words);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain("sm121: flash: restarts spark1: spark1: changed after the engine started");
    expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).not.toBe(started);
  });

  it("stops an up before anything stops when the HF cache lacks part of the model (seed 001's preflight)", async () => {
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash");
    const repo = join(node.home, ".cache", "huggingface", "hub", "models--Qwen--Qwen3.8-Flash-Next");
    const blob = readdirSync(join(repo, "blobs"))[0] ?? "";
    renameSync(join(repo, "blobs", blob), join(repo, "blobs", `${blob}.incomplete`));
    try {
      // The file check of every plan: the node, the directory, the first missing files, the fix.
      const refused = await e.up({ SM121_RESTART: "1" });
      expect(refused.code).not.toBe(0);
      expect(refused.all).toContain("sm121: the engines would refuse to start (nothing was stopped):");
      const words = `flash: spark1: Qwen/Qwen3.8-Flash-Next@main is not complete in the HF cache ${repo}: snapshots/`;
      expect(refused.all).toContain(words);
      expect(refused.all).toContain(`its blob blobs/${blob} is missing (a download or copy was cut short)`);
      expect(refused.all).toContain("fix: on spark1 run `HF_HOME=");
      expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).toBe(started);
    } finally {
      renameSync(join(repo, "blobs", `${blob}.incomplete`), join(repo, "blobs", blob));
    }
  });

  it("names the changed .env keys in the preview and applies a profile change with a backup", async () => {
    const before = readFileSync(envFile, "utf8");
    e.writeStack(stackYaml(e.site, "datagen"));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(/- \.env MAX_NUM_SEQS=4\n/);
    expect(preview.all).toMatch(/\+ \.env MAX_NUM_SEQS=8\n/);
    expect(preview.all).toMatch(/- \.env MAX_MODEL_LEN=524288\n/);
    expect(preview.all).toMatch(/\+ \.env MAX_MODEL_LEN=262144\n/);
    expect(readFileSync(envFile, "utf8")).toBe(before); // preview touched nothing
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(readFileSync(envFile, "utf8")).toContain("# sm121-profile: datagen");
    const backups = readdirSync(join(node.home, RECIPE_DIR))
      .filter((f) => f.startsWith(".env.sm121-bak-"))
      .sort();
    expect(backups).toHaveLength(2);
    expect(readFileSync(join(node.home, RECIPE_DIR, backups[1] ?? ""), "utf8")).toBe(before);
    expect(modelsIn(await sh(`curl -s http://127.0.0.1:${FLASH_PORT}/v1/models`))[0]?.max_model_len).toBe(262144);
  });

  it("finds a hand edit with refresh and repairs it with up", async () => {
    const rendered = readFileSync(envFile, "utf8");
    writeFileSync(envFile, rendered.replace('MAX_NUM_SEQS="8"', 'MAX_NUM_SEQS="16"'));
    const refresh = await e.refresh();
    expect(refresh.code, refresh.all).toBe(0);
    // Refresh rewrote the resource's state (stack outputs wait for the next program run).
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: {
        resources: Array<{
          type: string;
          outputs?: { outcome?: { status: string; nodes: Array<{ identity: string }> } };
        }>;
      };
    };
    const engine = state.deployment.resources.find((r) => r.type.endsWith(":EngineDeployment"));
    expect(engine?.outputs?.outcome?.status).toBe("drifted");
    // The node's identity keeps the look's finding in English words (each finding names its node).
    expect(engine?.outputs?.outcome?.nodes[0]?.identity).toBe(
      "drifted: spark1: .env edited on the node: MAX_NUM_SEQS 8 -> 16",
    );
    const preview = await e.preview();
    expect(preview.all).toMatch(/~ 1 to update/);
    expect(preview.all).toContain("spark1: .env edited on the node: MAX_NUM_SEQS 8 -> 16");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(/1 updated/);
    const repaired = readFileSync(envFile, "utf8");
    expect(repaired).toContain('MAX_NUM_SEQS="8"');
    expect(repaired).toContain('HF_TOKEN="hf_secret_e2e_do_not_print"');
  });

  it("restarts with SM121_RESTART=1 without rewriting an identical .env or backing it up", async () => {
    const env = readFileSync(envFile, "utf8");
    const backups = readdirSync(join(node.home, RECIPE_DIR)).filter((f) => f.startsWith(".env.sm121-bak-"));
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash");
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code, up.all).toBe(0);
    expect(await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).not.toBe(started);
    expect(readFileSync(envFile, "utf8")).toBe(env);
    expect(readdirSync(join(node.home, RECIPE_DIR)).filter((f) => f.startsWith(".env.sm121-bak-"))).toEqual(backups);
  });

  it("fails a start that start.sh refuses with start.sh's own reason, and the next up converges", async () => {
    // Another GPU process on the node: start.sh refuses with REQUIRE_IDLE_GPU=1 (its default). Not a
    // vLLM server: sm121's preflight refuses that one itself, before any change (test/e2e/progress.test.ts).
    await sh(
      "docker run -d --name busy --gpus all --network host lmsysorg/sglang:spark python3 -m sglang.launch_server " +
        `--model-path Qwen/Qwen3-8B --host 127.0.0.1 --port ${AT.port(2)} >/dev/null`,
    );
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("the engine exited before");
    expect(up.all).toContain("the GPU is busy (REQUIRE_IDLE_GPU=1)");
    expect(up.all).toContain("start.sh output");
    expect(up.all).not.toContain("hf_secret_e2e_do_not_print");
    await sh("docker rm -f busy >/dev/null");
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(modelsIn(await sh(`curl -s http://127.0.0.1:${FLASH_PORT}/v1/models`))[0]?.id).toBe("qwen38");
  });

  it("refuses the render-only tp2 profile before touching the node", async () => {
    e.writeStack(stackYaml(e.site, "tp2"));
    const preview = await e.preview();
    expect(preview.code).not.toBe(0);
    expect(preview.all).toContain("profile tp2 of flash is render-only (sm121-runnable: false)");
    e.writeStack(stackYaml(e.site, "datagen"));
  });

  it("moves spark1 from the script recipe to a docker deployment in one up", async () => {
    e.writeStack(stackYaml(e.site, "datagen", "{ name: solo, recipe: solo, nodes: [spark1] }"));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("spark1: stops deployment flash first (the node now serves solo)");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await sh("docker ps --format '{{.Names}}'")).toBe("sm121-solo-0\n");
    // The node's BIND (127.0.0.1) holds for every deployment on it.
    expect(modelsIn(await sh(`curl -s http://127.0.0.1:${SOLO_PORT}/v1/models`))[0]?.id).toBe("solo");
  });

  it("destroys: the container is gone, the .env stays", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    expect(await sh("docker ps -aq | wc -l")).toBe("0\n");
    expect(existsSync(envFile)).toBe(true);
  });
});
