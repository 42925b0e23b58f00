/**
 * The operator's view of an up (issue 13): progress while the engine loads, the per-step timings
 * in the up's output and in the stack state, and seed 001's preflight: the .env key diff (in the
 * preview with sm121:preflight and in the up), the client notes, the node recipe's dockerArgs, the
 * overlay's manifest.json kept with the deployment's state, and no other vLLM container.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineBehaviour, type SimNode, type SimSite } from "../site/site";

const AT = allocate(__filename);

const RECIPE_DIR = "spark-recipes/qwen38-flash";
const PORT = AT.port(0);
const OVERLAY_MANIFEST = '{\n  "builder": "e2e",\n  "set": ["progress"]\n}\n';

function stackYaml(site: SimSite): string {
  const extra = (n: SimNode) =>
    [
      `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38, mtpShardR2: ${n.home}/models/qwen38-mtp-r2, ` +
        `captureDir: ${n.home}/capture }`,
      "      recipes:",
      `        qwen38-flash: { dir: ~/${RECIPE_DIR}, container: qwen38-flash, dockerArgs: "-e SM121_NODE_ARG=spark", ` +
        `ownedMounts: [/recipe/files, /recipe/mtp_draft_vocab.json] }`,
    ].join("\n");
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    "  sm121:preflight: true",
    nodesYaml(site, extra, () => ({ BIND: "127.0.0.1", PORT: String(PORT) })),
    "  sm121:deployments:",
    "    - { name: cap, recipe: qwen38-flash, profile: capture, overlay: overlays/progress, nodes: [spark1] }",
    "",
  ].join("\n");
}

interface Exported {
  deployment: {
    resources: Array<{
      type: string;
      outputs?: { outcome?: { nodes: Array<{ timings?: Array<{ step: string; s: number }> }> } };
    }>;
  };
}

describe.sequential("progress, step timings and seed 001's preflight through pulumi up", () => {
  let e: E2E;
  let node: SimNode;
  const sh = async (script: string) => sshScript(e.site, node, script);

  beforeAll(async () => {
    e = await e2eProject({ name: "progress", nodes: ["spark1"], ...AT.site(), config: () => "" });
    node = e.site.nodes[0] as SimNode;
    makeScriptRecipe(node, RECIPE_DIR);
    mkdirSync(join(node.home, "models", "qwen38-mtp-r2"), { recursive: true });
    writeFileSync(join(node.home, RECIPE_DIR, ".env"), 'MAX_NUM_SEQS="2"\n');
    mkdirSync(join(e.dir, "overlays", "progress"), { recursive: true });
    writeFileSync(join(e.dir, "overlays", "progress", "docker-args.txt"), "-e SM121_OVERLAY=progress\n");
    writeFileSync(join(e.dir, "overlays", "progress", "manifest.json"), OVERLAY_MANIFEST);
    // An engine that loads for 25 s: readiness must say what it waits for while it does.
    setEngineBehaviour(node, { startDelayS: 25 });
    e.writeStack(stackYaml(e.site));
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("shows the node's .env keys against the render in the preview (sm121:preflight), changing nothing", async () => {
    // --debug shows every debug line that reaches the engine: sm121's notes and the SDK's own.
    const preview = await e.pulumi.run(["preview", "--diff", "--debug"]);
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(
      /preflight: spark1: \.env keys, node -> render: MAX_NUM_SEQS 2 -> 4, .*SERVED_MODEL_NAME added \(qwen38\)/,
    );
    expect(preview.all).toMatch(/Registering resource: t=sm121:index:Deployment, name=cap/);
    expect(preview.all).toMatch(
      /Registering resource: t=pulumi-nodejs:dynamic\/sm121:EngineDeployment, name=cap-engine/,
    );
    expect(readFileSync(join(node.home, RECIPE_DIR, ".env"), "utf8")).toBe('MAX_NUM_SEQS="2"\n');
  });

  it(
    "prints readiness progress, the key diff, the client note and the step timings of the up (and, verbose, " +
      "the raw records)",
    async () => {
      const up = await e.up({ SM121_VERBOSE: "1" });
      expect(up.code, up.all).toBe(0);
      // SM121_VERBOSE=1 (seed 001's --verbose): the node scripts' raw records, under the node's name.
      expect(up.all).toMatch(/spark1: @sm121 \{"kind":"took","step":/);
      const url = `http://127\\.0\\.0\\.1:${PORT}/v1/models`;
      expect(up.all).toMatch(/spark1: \.env keys, node -> render: MAX_NUM_SEQS 2 -> 4/);
      expect(up.all).toMatch(new RegExp(`spark1: waiting up to \\d+ s for ${url} to answer 200`));
      // At least one progress line while the engine loads (every 10 s of its 25 s).
      expect(up.all).toMatch(new RegExp(`spark1: waiting for ${url}: \\d+ s of \\d+ s \\(HTTP \\d{3}\\)`));
      expect(up.all).toMatch(/spark1: engine log: \S/);
      expect(up.all).toMatch(/client note \(sm121-client\): .*cache_salt/);
      // A first serve: no stop; each other step with its time, then the total.
      expect(up.all).toMatch(
        new RegExp(
          "step timings on spark1: " +
            ["memory-gate", "write", "start", "readiness", "verify", "total"]
              .map((s) => String.raw`${s} \d+\.\d s`)
              .join(", "),
        ),
      );
      const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as Exported;
      const engine = state.deployment.resources.find((r) => r.type.endsWith(":EngineDeployment"));
      expect((engine?.outputs?.outcome?.nodes[0]?.timings ?? []).map((t) => t.step)).toEqual([
        "memory-gate",
        "write",
        "start",
        "readiness",
        "verify",
      ]);
    },
    240_000,
  );

  it(
    "applies the node recipe's dockerArgs after the overlay's and keeps the overlay manifest with " +
      "the deployment's state",
    () => {
      const env = readFileSync(join(node.home, RECIPE_DIR, ".env"), "utf8");
      expect(env).toMatch(/^EXTRA_DOCKER_ARGS=".*-e SM121_OVERLAY=progress -e SM121_NODE_ARG=spark"$/m);
      expect(readFileSync(join(node.home, ".sm121", "deployments", "cap", "manifest.json"), "utf8")).toBe(
        OVERLAY_MANIFEST,
      );
    },
  );

  it("refuses to start while another vLLM container runs on the node, naming it, and changes nothing", async () => {
    setEngineBehaviour(node, null);
    const run = await sh(
      `docker run -d --name rogue-vllm --network host --gpus all vllm/vllm-openai:latest ` +
        `Qwen/Qwen3-8B --port ${AT.port(1)} --gpu-memory-utilization 0.1 >/dev/null`,
    );
    expect(run.code, run.stderr).toBe(0);
    const ps = await sh("docker ps --no-trunc --format '{{.Names}}|{{.Command}}'");
    expect(ps.stdout, (await sh("docker logs rogue-vllm 2>&1 | tail -n 5")).stdout).toMatch(
      /^rogue-vllm\|"vllm serve Qwen/m,
    );
    const started = (await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).stdout;
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(
      /preflight of cap failed; nothing was changed:\s+spark1: another vLLM container runs on the node: rogue-vllm/,
    );
    expect((await sh("docker inspect -f '{{.State.StartedAt}}' qwen38-flash")).stdout).toBe(started);
    await sh("docker rm -f rogue-vllm >/dev/null");
    const again = await e.up({ SM121_RESTART: "1" });
    expect(again.code, again.all).toBe(0);
    // A restart stops first: its time leads the line.
    expect(again.all).toMatch(/step timings on spark1: stop \d+\.\d s, memory-gate /);
  }, 240_000);
});
