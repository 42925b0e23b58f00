/**
 * The real vLLM (PyPI's CPU build, serving the tiny model; test/site/README.md "The real vLLM")
 * through the real Pulumi CLI, in order on one site, each engine started as few times as the
 * scenarios allow: one docker and one tmux replica of one model, with an API key, behind the real
 * LiteLLM proxy and scraped by the real Prometheus; readiness by the first token and the verify
 * step's checks; a no-change up; a hung (SIGSTOP) and a dead (SIGKILL) engine found by the look and
 * restarted by a plain up; a changed flag rolling both replicas under streamed requests; destroy;
 * a script recipe whose start.sh gives the engine a key of its own (the up fails at once); then two
 * nodes, tensor parallel 2, rank 1 headless.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { benchSchema } from "../../src/cli/schemas";
import { sm121 } from "../cli-helpers";
import { e2eProject, REPO, type E2E } from "../helpers/project";
import { allocate } from "../site/alloc";
import { buildImage, sshScript } from "../site/exec";
import { nodeProcesses } from "../site/faults";
import { startLiteLLM, type LiteLLM } from "../site/litellm";
import { eventually, startPrometheus, type Prometheus } from "../site/prometheus";
import { REAL_VLLM_IMAGE, TINY_MODEL } from "../site/realvllm";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);
const KEY = "sk-real-vllm-5f1e";

/**
 * The real engine's image as an NGC one is made (no entrypoint: `docker run <image> vllm serve ...`),
 * which is what the script recipe's start.sh runs; built on r1 from the site's vllm/vllm-openai.
 */
const SCRIPT_IMAGE = "registry.example/sm121/vllm-cpu-ngc:0.32.0";

/** A profile of the script recipe (test/site/recipe/qwen38-flash/start.sh) for the tiny model on the real engine. */
const SCRIPT_PROFILE = `# sm121-recipe: tiny-script
# sm121-status: stable
# sm121-description: the tiny model on the real vLLM, through the recipe's start.sh
CONTAINER_NAME=tiny-script
IMAGE=${SCRIPT_IMAGE}
MODEL=${TINY_MODEL}
SERVED_MODEL_NAME=tiny
MAX_MODEL_LEN=512
MAX_NUM_SEQS=4
GPU_MEMORY_UTILIZATION=0.9
KV_CACHE_DTYPE=auto
CHAT_TEMPLATE=
MTP_K=0
MTP_DRAFT_VOCAB=
READY_TIMEOUT_S=600
MEMWATCH_RELIEF=off
EXTRA_VLLM_ARGS="--enforce-eager"
EXTRA_DOCKER_ARGS="-e HF_HUB_OFFLINE=1"
`;

/**
 * The tiny model on the real vLLM: docker (the real engine's image) or tmux (the node's vllm). With
 * --shutdown-timeout, a stopped vLLM finishes the streams it runs (and answers new requests 500,
 * which LiteLLM retries on another replica); without it, it cuts them (docs/rolling.md).
 */
const recipe = (deploy: "docker" | "tmux", extra: string[] = [], tp = 1) => `engine = "vllm"
deploy = "${deploy}"
model = "${TINY_MODEL}"
served_model_name = "tiny"
${deploy === "docker" ? `image = "${REAL_VLLM_IMAGE}"\n` : ""}tp = ${tp}
port = 8000
args = ${JSON.stringify(["--max-model-len", "512", "--enforce-eager", "--shutdown-timeout", "5", ...extra])}
[env]
HF_HUB_OFFLINE = "1"
[readiness]
timeout_s = 600
max_model_len = 512
`;

describe.sequential("the real vLLM through pulumi up", () => {
  let e: E2E;
  let r1: SimNode;
  let r2: SimNode;
  let prom: Prometheus | undefined;
  let proxy: LiteLLM | undefined;
  const gwFile = () => join(e.dir, "..", "gw", "litellm.yaml");
  const scrapeFile = () => join(e.dir, "..", "prometheus", "sm121.json");
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout.trim();
  const started = (n: SimNode) => sh(n, "docker inspect -f '{{.State.StartedAt}}' sm121-tiny-d-0");
  const tmuxPid = (n: SimNode) => sh(n, "tmux list-panes -a -F '#{pane_pid}' 2>/dev/null | head -n 1");
  const setKey = async () =>
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: KEY })).code).toBe(0);
  const stack = async (deployments: string[]) => {
    e.reconfigure(
      [
        `  sm121:gateway: { path: ${gwFile()}, format: litellm }`,
        `  sm121:scrapeTargets: { path: ${scrapeFile()} }`,
        "  sm121:deployments:",
        ...deployments.map((d) => `    - ${d}`),
      ].join("\n"),
    );
    await setKey();
  };
  const REPLICAS = [
    "{ name: tiny-d, recipe: tiny-docker, nodes: [r1] }",
    "{ name: tiny-t, recipe: tiny-tmux, nodes: [r2] }",
  ];
  const curl = (n: SimNode, route: string, key?: string) =>
    sh(
      n,
      `curl -s -o /dev/null -w '%{http_code}' -m 10 ${key === undefined ? "" : `-H 'Authorization: Bearer ${key}' `}` +
        `http://${n.ip}:8000${route}`,
    );

  beforeAll(async () => {
    e = await e2eProject({
      name: "realvllm",
      nodes: ["r1", "r2"],
      ...AT.site(),
      realVllm: true,
      recipes: {
        "tiny-docker.toml": recipe("docker"),
        "tiny-tmux.toml": recipe("tmux"),
        "tiny-script.toml": 'engine = "vllm"\ndeploy = "script"\nprofiles_dir = "tiny-script"\n',
        "tiny-script/own-key.env": SCRIPT_PROFILE,
      },
      // r1 holds seed 001's script recipe (its start.sh runs `docker run <image> vllm serve`): the
      // node's BIND and PORT, where start.sh serves, are where every engine of r1 serves anyway.
      prepare: (site) => void makeScriptRecipe(site.nodes[0] as SimNode, "tiny-script"),
      nodeEnv: (n): Record<string, string> => (n.name === "r1" ? { BIND: n.ip, PORT: "8000" } : {}),
      nodeExtra: (n) =>
        n.name === "r1" ? "      recipes:\n        tiny-script: { dir: ~/tiny-script, container: tiny-script }" : "",
      config: () => "",
    });
    [r1, r2] = e.site.nodes as [SimNode, SimNode];
  }, 300_000);
  afterAll(async () => {
    await proxy?.stop();
    await prom?.stop();
    await e?.stop();
  });

  it("serves the real engine in a container and in tmux: first token, the verify step's checks, the key", async () => {
    await stack(REPLICAS);
    // Both at once (replicas start one after the other otherwise): the roll is a later test's.
    const up = await e.up({ SM121_ROLL: "all" });
    expect(up.code, up.all).toBe(0);
    // The verify step read the real engine's KV cache line (a CPU's, on this site) and said which.
    expect(up.all).not.toContain("no KV cache line in the engine log");
    expect(up.all).toMatch(/ready in [\d.]+ s/);
    expect(up.all).not.toContain(KEY);
    const status = await sm121(e, ["status", "--json"]);
    type Kv = { line: string; tokens: string; device: string | null };
    type Report = { deployments: Array<{ nodes: Array<{ kvCache: Kv | null }> }> };
    const kv = (JSON.parse(status.stdout) as Report).deployments.map((d) => d.nodes[0]?.kvCache);
    expect(kv).toEqual([
      expect.objectContaining({ tokens: "1,048,576", line: expect.stringContaining("CPU KV cache size") as unknown }),
      expect.objectContaining({ tokens: "1,048,576", line: expect.stringContaining("CPU KV cache size") as unknown }),
    ]);
    // Status says where the cache lives, as the engine's line says it: the CPU build's memory.
    expect(kv.map((k) => k?.device)).toEqual(["CPU", "CPU"]);
    const table = await sm121(e, ["status"]);
    expect(table.stdout).toContain("1,048,576 tokens on the CPU");
    // The engine refuses /v1 without the key; /metrics and /health answer without it.
    for (const n of [r1, r2]) {
      expect(await curl(n, "/v1/models")).toBe("401");
      expect(await curl(n, "/v1/models", KEY)).toBe("200");
      expect(await curl(n, "/metrics")).toBe("200");
      expect(await curl(n, "/health")).toBe("200");
    }
    for (const [d, n] of [
      ["tiny-d", "r1"],
      ["tiny-t", "r2"],
    ] as const) {
      const smoke = await sm121(e, ["smoke", d]);
      expect(smoke.code, smoke.stdout + smoke.stderr).toBe(0);
      expect(smoke.stdout).toMatch(new RegExp(`^${d} on ${n} .*HTTP 200`, "m"));
    }
  }, 900_000);

  it("a second up with nothing changed restarts nothing", async () => {
    const before = [await started(r1), await tmuxPid(r2)];
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).toMatch(/unchanged/);
    expect(again.all).not.toMatch(/updated|created/);
    expect([await started(r1), await tmuxPid(r2)]).toEqual(before);
  }, 300_000);

  it("the real Prometheus reads the scrape-target file: every dashboard query returns data", async () => {
    prom = await startPrometheus({ dir: join(e.site.dir, "prometheus"), port: AT.port(0), files: [scrapeFile()] });
    const up = async () => (await prom?.targets())?.map((t) => `${t.labels["deployment"] ?? ""} ${t.health}`).sort();
    await eventually("both targets up", up, (t) => t?.join() === "tiny-d up,tiny-t up");
    // Traffic for the counters and histograms to move; then two scrapes.
    for (const d of ["tiny-d", "tiny-t"]) expect((await sm121(e, ["smoke", d])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 2500));
    const dash = JSON.parse(readFileSync(join(REPO, "dashboards", "sm121.json"), "utf8")) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    for (const p of dash.panels) {
      for (const t of p.targets) {
        const result = (await prom.query(t.expr)).filter((s) => Number.isFinite(Number(s.value[1])));
        expect(result.length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
      }
    }
  }, 120_000);

  it("an engine stopped with SIGSTOP is hung in the plan, one killed is dead; a plain up restarts both", async () => {
    const before = [await started(r1), await tmuxPid(r2)];
    // r1: the engine core and its worker stop; the API server still lists the model.
    const core = nodeProcesses(r1, /^VLLM::/).map((l) => Number(l.split(" ")[0]));
    expect(core.length).toBeGreaterThan(0);
    for (const pid of core) process.kill(pid, "SIGSTOP");
    // r2: every process of the engine is killed.
    for (const l of nodeProcesses(r2, /vllm serve|^VLLM::/)) process.kill(Number(l.split(" ")[0]), "SIGKILL");
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.stdout).toMatch(/\+ \[0\]: "r1: answers \/v1\/models but no token in/);
    expect(preview.all).toMatch(/sm121: tiny-d: restarts r1: r1: answers \/v1\/models but no token/);
    expect(preview.all).toMatch(/sm121: tiny-t: restarts r2: /);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await started(r1)).not.toBe(before[0]);
    expect(await tmuxPid(r2)).not.toBe(before[1]);
    for (const n of [r1, r2]) expect(await curl(n, "/v1/models", KEY)).toBe("200");
  }, 1_200_000);

  it("a changed flag rolls both replicas one at a time behind the real LiteLLM, streams running", async () => {
    proxy = await startLiteLLM({
      dir: join(e.dir, "..", "litellm"),
      port: AT.port(1),
      config: gwFile(),
      key: "sk-real-vllm-proxy",
      env: { SM121_API_KEY: KEY },
    });
    const before = await started(r1);
    const pid = await tmuxPid(r2);
    writeFileSync(join(e.dir, "recipes", "tiny-docker.toml"), recipe("docker", ["--max-num-seqs", "32"]));
    writeFileSync(join(e.dir, "recipes", "tiny-tmux.toml"), recipe("tmux", ["--max-num-seqs", "32"]));
    // About as long as the roll: two engine starts one after the other.
    const rate = 2;
    const requests = 300;
    const load = sm121(
      e,
      ["bench", "--url", proxy.url, "--model", "tiny", "--rate", String(rate), "--requests", String(requests)].concat([
        "--concurrency",
        "8",
        "--max-tokens",
        "8",
        "--prompt-tokens",
        "16",
        "--json",
      ]),
      { env: { SM121_API_KEY: proxy.key }, timeoutMs: (requests / rate) * 1000 + 600_000 },
    );
    // Two real engine starts one after the other: room for a loaded machine (a start took 142 s there).
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { timeoutMs: 900_000 });
    const b = await load;
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(/roll/);
    expect(await started(r1)).not.toBe(before);
    expect(await tmuxPid(r2)).not.toBe(pid);
    const bench = benchSchema().parse(JSON.parse(b.stdout));
    const said = `${bench.completed} of ${requests} completed, ${bench.errors} errors, ${bench.retried} retried`;
    console.log(`the real vLLM's roll through LiteLLM: ${said}`);
    expect(bench.errors, bench.errorSamples.join("\n")).toBe(0);
    expect(bench.completed).toBe(requests);
  }, 1_200_000);

  it("destroy leaves nothing running", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    for (const n of [r1, r2]) {
      expect(await sh(n, "docker ps -aq | wc -l")).toBe("0");
      expect(nodeProcesses(n, /vllm serve|^VLLM::/)).toEqual([]);
    }
  }, 300_000);

  it("a script recipe's engine started with a key of its own: the up fails at once, in sm121's words", async () => {
    // The operator's own .env gives the engine another key (start.sh passes it as --api-key); sm121
    // holds sm121:apiKey, which the real engine refuses with 401 once it serves.
    const OWN = "sk-the-engines-own-4c2a";
    await buildImage(e.site, r1, SCRIPT_IMAGE, `FROM ${REAL_VLLM_IMAGE}\nENTRYPOINT []`);
    writeFileSync(join(r1.home, "tiny-script", ".env"), `API_KEY='${OWN}'\n`);
    await stack(["{ name: own, recipe: tiny-script, profile: own-key, nodes: [r1] }"]);
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { timeoutMs: 900_000 });
    expect(up.code, up.all).not.toBe(0);
    expect(up.all).toContain("the engine refuses the API key sm121 holds for it (HTTP 401 from /v1/models)");
    expect(up.all).toContain("deployment own is marked failed in the stack state");
    for (const k of [KEY, OWN]) expect(up.all).not.toContain(k);
    // It was the real engine that refused: it serves its own key.
    const own = (key: string) =>
      sh(
        r1,
        `curl -s -o /dev/null -w '%{http_code}' -m 10 -H 'Authorization: Bearer ${key}' ` +
          `http://${r1.ip}:8000/v1/models`,
      );
    expect([await own(OWN), await own(KEY)]).toEqual(["200", "401"]);
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    expect(await sh(r1, "docker ps -aq | wc -l")).toBe("0");
  }, 900_000);

  it("two nodes, tensor parallel 2, rank 1 headless: serves and answers a chat", async () => {
    writeFileSync(join(e.dir, "recipes", "tiny-tp2.toml"), recipe("docker", [], 2));
    await stack(["{ name: pair, recipe: tiny-tp2, nodes: [r1, r2] }"]);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    const worker = await sh(r2, "docker inspect -f '{{json .Args}}' sm121-pair-1");
    expect(JSON.parse(worker)).toEqual(expect.arrayContaining(["--headless", "--node-rank", "1"]));
    const smoke = await sm121(e, ["smoke"]);
    expect(smoke.code, smoke.stdout + smoke.stderr).toBe(0);
    expect(smoke.stdout).toMatch(/pair on r1 .*HTTP 200/);
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
  }, 900_000);
});
