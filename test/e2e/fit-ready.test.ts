/**
 * The memory fit and readiness by first token, end to end through the real Pulumi CLI: the
 * preview reads the checkpoint's config.json and safetensors index from the node's HF cache
 * (Qwen3-32B's real ones, test/fixtures/models) and its MemTotal, refuses a plan that cannot fit
 * before touching the node, naming the numbers, and shows the table of one that does; an up
 * records the time to ready and to the first token in the stack outputs; an engine that lists
 * its model but never answers a chat fails readiness with its own message.
 */
import { cpSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { setEngineBehaviour, type SimNode, type SimSite } from "../site/site";

const AT = allocate(__filename);

const FIXTURE = join(__dirname, "..", "fixtures", "models", "Qwen--Qwen3-32B");
const REV = "9216db5781bf21249d130ec9da846c4624c16137";

const recipe = (util: string) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-32B"
served_model_name = "qwen3-32b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "32768", "--gpu-memory-utilization", "${util}"]
[readiness]
timeout_s = 20
`;

function stack(site: SimSite): string {
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    nodesYaml(site),
    "  sm121:deployments:",
    "    - { name: q32, recipe: q32, nodes: [spark1] }",
    "",
  ].join("\n");
}

/**
 * The checkpoint's small files in the node's HF cache, in the hub's layout (the weights themselves
 * are not needed to plan).
 */
function placeCheckpoint(n: SimNode): void {
  const repo = join(n.home, ".cache", "huggingface", "hub", "models--Qwen--Qwen3-32B");
  mkdirSync(join(repo, "refs"), { recursive: true });
  writeFileSync(join(repo, "refs", "main"), REV);
  cpSync(FIXTURE, join(repo, "snapshots", REV), { recursive: true });
}

describe.sequential("memory fit and first token", () => {
  let e: E2E;
  let n: SimNode;
  const recipeFile = () => join(e.dir, "recipes", "q32.toml");

  beforeAll(async () => {
    e = await e2eProject({
      name: "fit",
      nodes: ["spark1"],
      ...AT.site(),
      config: () => "",
      recipes: { "q32.toml": recipe("0.5") },
      prepare: (site) => placeCheckpoint(site.nodes[0] as SimNode),
    });
    n = e.site.nodes[0] as SimNode;
    e.writeStack(stack(e.site));
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses at preview a plan that cannot fit, with the numbers, before touching the node", async () => {
    const preview = await e.preview();
    expect(preview.code).not.toBe(0);
    expect(preview.all).toContain(
      "deployment q32 cannot fit in memory (Qwen/Qwen3-32B): spark1: " +
        "weights 61.0 GiB + KV cache 8.0 GiB (one sequence of 32768 tokens, " +
        "auto) + engine overhead 4.0 GiB = 73.0 GiB per node > 60.8 GiB (0.5 x 121.7 GiB MemTotal, " +
        "--gpu-memory-utilization); what can make it fit, in recipes/q32.toml: raise --gpu-memory-utilization to 0.61;",
    );
    expect(preview.all).toContain("weights: the safetensors index in spark1's HF cache");
    expect((await sshScript(e.site, n, "docker ps -aq | wc -l; ls ~/.sm121 2>/dev/null | wc -l")).stdout).toBe(
      "0\n0\n",
    );
  }, 240_000);

  it("reads a node's memory as the node reports it (its free), not a GB10's", async () => {
    writeFileSync(recipeFile(), recipe("0.85"));
    writeFileSync(join(n.root, "etc", "memory.json"), JSON.stringify({ memTotalKiB: 64 * 1024 * 1024 }));
    const small = await e.preview();
    expect(small.code).not.toBe(0);
    expect(small.all).toContain("= 73.0 GiB per node > 54.4 GiB (0.85 x 64.0 GiB MemTotal, --gpu-memory-utilization)");
  }, 240_000);

  it("shows the table of a plan that fits; the up records time to ready and to first token", async () => {
    writeFileSync(join(n.root, "etc", "memory.json"), JSON.stringify({ memTotalKiB: 127601452 }));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(
      /spark1 +121\.7 GiB +103\.4 GiB +61\.0 GiB +8\.0 GiB +4\.0 GiB +73\.0 GiB +fits \(4 full seq\)/,
    );
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(/spark1: ready in [\d.]+ s; first token in \d+ ms \(a one-token chat completion\)/);
    const first = (
      JSON.parse((await e.pulumi.run(["stack", "output", "q32", "--json"])).stdout) as {
        firstToken?: Array<{ node: string; readyS: number; ttftMs: number }>;
      }
    ).firstToken;
    expect(first?.map((f) => f.node)).toEqual(["spark1"]);
    expect(first?.[0]?.ttftMs).toBeGreaterThanOrEqual(0);
    expect(first?.[0]?.readyS).toBeGreaterThanOrEqual((first?.[0]?.ttftMs ?? 0) / 1000 - 0.1);
    // The up's summary (Pulumi's Outputs) prints them.
    expect(up.all).toMatch(/firstToken\s*:\s*\[/);
  }, 240_000);

  it("fails readiness with its own message when the engine never answers a chat", async () => {
    setEngineBehaviour(n, { mode: "chat-never-answers" });
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("readiness failed: node spark1: readiness exited with code 8");
    expect(up.all).toMatch(
      new RegExp(
        String.raw`sm121: the engine lists its model but http://[\d.]+:8000/v1/chat/completions gave no ` +
          String.raw`first token within \d+ s \(a chat completion of max_tokens 1; readiness\.timeout_s is 20\)`,
      ),
    );
    expect(up.all).toContain("generated no token for a one-token chat completion");
    expect(up.all).not.toMatch(/did not answer 200 within/);
    setEngineBehaviour(n, null);
  }, 240_000);
});
