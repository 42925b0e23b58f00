/**
 * Metrics out, through the real Pulumi CLI on the simulated site and a real Prometheus (Debian's
 * package): `pulumi up` writes the file_sd file on a node, Prometheus scrapes every engine it
 * names, `sm121 bench` load shows in `sm121 status` and in the right deployment's counters, every
 * query of dashboards/sm121.json returns data, a file edited or deleted on its node is written
 * again by a plain up, and the labels follow a node move and a downed deployment after one up.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { loadSchema, statusSchema, benchSchema } from "../../src/cli/schemas";
import { cells } from "../../src/cli/table";
import { json, sm121 } from "../cli-helpers";
import { e2eProject, REPO, type E2E } from "../helpers/project";
import { eventually, startPrometheus, type Prometheus } from "../site/prometheus";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const CHAT = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "chat-model"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = 8000
args = ["--max-model-len", "8192", "--max-num-seqs", "2"]
[readiness]
timeout_s = 60
`;
const CODE = `engine = "sglang"
deploy = "tmux"
model = "Qwen/Qwen3-8B"
served_model_name = "code-model"
port = 30000
[readiness]
timeout_s = 60
`;

/** The stack's deployments and where the scrape file goes (on m3, which serves nothing). */
const config = (chat: string, code: string) =>
  [
    "  sm121:scrapeTargets: { path: ~/prometheus/sm121.json, node: m3 }",
    "  sm121:deployments:",
    `    - { name: chat, recipe: chat, nodes: [${chat}] }`,
    `    - { name: code, recipe: code, nodes: [${code}] }`,
  ].join("\n");

interface Group {
  targets: string[];
  labels: Record<string, string>;
}

describe.sequential("metrics: scrape targets, a real Prometheus, status load and the dashboard", () => {
  let e: E2E;
  let prom: Prometheus;
  let m1: SimNode, m2: SimNode, m3: SimNode;
  const file = () => join(m3.home, "prometheus", "sm121.json");
  const groups = () => JSON.parse(readFileSync(file(), "utf8")) as Group[];
  const value = async (expr: string) => Number((await prom.query(expr))[0]?.value[1] ?? "0");
  /** The active targets as (deployment, node, health), sorted. */
  const targets = async () =>
    (await prom.targets()).map((t) => `${t.labels["deployment"] ?? ""} ${t.labels["node"] ?? ""} ${t.health}`).sort();

  beforeAll(async () => {
    e = await e2eProject({
      name: "metrics",
      nodes: ["m1", "m2", "m3"],
      ...AT.site(),
      recipes: { "chat.toml": CHAT, "code.toml": CODE },
      config: () => "",
    });
    [m1, m2, m3] = e.site.nodes as [SimNode, SimNode, SimNode];
    // Tokens at a pace a bench can be seen in, and a KV cache small enough for its use to show.
    for (const n of [m1, m2]) setEngineBehaviour(n, { tokensPerSecond: 40, kvCacheTokens: 2000 });
    e.reconfigure(config("m1", "m2"));
    // The suite's copy of the CLI is taken now, not while the bench below should be running.
    expect((await sm121(e, ["validate"])).code).toBe(0);
  }, 300_000);
  afterAll(async () => {
    await prom?.stop();
    await e?.stop();
  });

  it("pulumi up writes one target group per deployment, labelled, and Prometheus finds every target up", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(groups()).toEqual([
      {
        targets: [`${m1.ip}:8000`],
        labels: {
          __metrics_path__: "/metrics",
          deployment: "chat",
          node: "m1",
          rank: "0",
          sm121_engine: "vllm",
          model: "chat-model",
          recipe: "chat",
        },
      },
      {
        targets: [`${m2.ip}:30000`],
        labels: {
          __metrics_path__: "/metrics",
          deployment: "code",
          node: "m2",
          rank: "0",
          sm121_engine: "sglang",
          model: "code-model",
          recipe: "code",
        },
      },
    ]);
    prom = await startPrometheus({ dir: join(e.site.dir, "prometheus"), port: AT.port(0), files: [file()] });
    expect(
      await eventually("both targets up", targets, (t) => t.join() === ["chat m1 up", "code m2 up"].join()),
    ).toHaveLength(2);
    const up1 = await prom.query('up{deployment!=""}');
    expect(up1.map((s) => [s.metric["deployment"], s.value[1]]).sort()).toEqual([
      ["chat", "1"],
      ["code", "1"],
    ]);
  });

  it("bench load on chat shows in sm121 status and in chat's counters, not in code's", async () => {
    const before = {
      requests: await value('sum(vllm:request_success_total{deployment="chat"})'),
      generated: await value('sum(vllm:generation_tokens_total{deployment="chat"})'),
      prompt: await value('sum(vllm:prompt_tokens_total{deployment="chat"})'),
      codeRequests: await value('sum(sglang:num_requests_total{deployment="code"})'),
    };
    const bench = sm121(e, [
      "bench",
      "chat",
      "--requests",
      "48",
      "--concurrency",
      "4",
      "--max-tokens",
      "24",
      "--prompt-tokens",
      "16",
      "--json",
    ]);
    await eventually(
      "chat running requests in Prometheus",
      () => value('sum(vllm:num_requests_running{deployment="chat"})'),
      (v) => v > 0,
      120_000,
    );
    const [asText, asJson] = [await sm121(e, ["status"]), await sm121(e, ["status", "--json"])];
    console.log(`sm121 status during sm121 bench chat:\n${asText.stdout}`);
    const report = statusSchema().parse(json(asJson));
    const load = (d: string) => loadSchema().parse(report.deployments.find((x) => x.deployment === d)?.nodes[0]?.load);
    const chat = load("chat");
    if (!chat.measured) throw new Error(`chat load not measured: ${JSON.stringify(chat)}`);
    expect(chat.generationTokensPerS).toBeGreaterThan(0);
    expect(chat.running).toBeLessThanOrEqual(2);
    expect(chat.kvCacheUsage).toBeGreaterThan(0);
    expect(load("code")).toMatchObject({ measured: true, running: 0, waiting: 0, generationTokensPerS: 0 });
    expect(asText.stdout).toMatch(/DEPLOYMENT +NODE +RUNNING +WAITING +KV CACHE USE +PROMPT TOK\/S +GEN TOK\/S/);

    const b = benchSchema().parse(json(await bench));
    expect([b.completed, b.errors, b.outputTokens]).toEqual([48, 0, 48 * 24]);
    await eventually(
      "chat's generated tokens scraped",
      () => value('sum(vllm:generation_tokens_total{deployment="chat"})'),
      (v) => v === before.generated + b.outputTokens,
    );
    expect(await value('sum(vllm:request_success_total{deployment="chat"})')).toBe(before.requests + 48);
    expect(
      await value('sum(vllm:request_success_total{deployment="chat",finished_reason="length"})'),
    ).toBeGreaterThanOrEqual(48);
    expect(await value('sum(vllm:prompt_tokens_total{deployment="chat"})')).toBeGreaterThanOrEqual(
      before.prompt + 48 * 16,
    );
    // code, idle, got only each status run's liveness check (one 1-token completion); chat, generating, none.
    await eventually(
      "code's liveness requests scraped",
      () => value('sum(sglang:num_requests_total{deployment="code"})'),
      (v) => v === before.codeRequests + 2,
    );
    // While two ran, the others waited: the queue the engine reported, as Prometheus kept it.
    expect(await value('max_over_time(sum(vllm:num_requests_waiting{deployment="chat"})[5m:1s])')).toBeGreaterThan(0);
  });

  it("every query of dashboards/sm121.json returns data from the real Prometheus", async () => {
    const dash = JSON.parse(readFileSync(join(REPO, "dashboards", "sm121.json"), "utf8")) as {
      panels: Array<{ title: string; targets: Array<{ expr: string }> }>;
    };
    const lines: string[] = [];
    for (const p of dash.panels) {
      for (const t of p.targets) {
        const result = await prom.query(t.expr);
        lines.push(`${p.title}: ${t.expr}`, ...result.map((s) => `  ${JSON.stringify(s.metric)} ${s.value[1]}`));
        expect(result.length, `${p.title}: ${t.expr}`).toBeGreaterThan(0);
        expect(
          result.some((s) => Number.isFinite(Number(s.value[1]))),
          `${p.title}: ${t.expr}`,
        ).toBe(true);
      }
    }
    console.log(`dashboard queries against Prometheus:\n${lines.join("\n")}`);
  });

  it("status --watch draws the load table again in the terminal's width", async () => {
    let frames: string[] = [];
    let stop = () => {};
    const watch = sm121(e, ["status", "--watch", "--interval", "1"], {
      env: { COLUMNS: "72" },
      onSpawn: (child) => (stop = () => child.kill("SIGINT")),
      onStdout: (out) => {
        frames = out.split("\u001b[H\u001b[2J").filter((f) => f !== "");
        if (frames.length >= 3) stop();
      },
    });
    const run = await watch;
    expect(frames.length, run.stderr).toBeGreaterThanOrEqual(3);
    const last = frames[1] ?? "";
    expect(last).toMatch(/^sm121 status --watch: stack sim, \d\d:\d\d:\d\d UTC; Ctrl-C ends/);
    expect(last).toMatch(/\n {2}chat +m1 +\d+/);
    expect(last).toMatch(/\n {2}code +m2 +0 /);
    expect(last.split("\n").filter((l) => cells(l) > 72)).toEqual([]);
  });

  it("a plain up writes the file again when it was deleted or edited on its node, and says why", async () => {
    const written = readFileSync(file(), "utf8");
    rmSync(file());
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(`m3:~/prometheus/sm121.json is gone; this up writes it again`);
    expect((await e.up()).code).toBe(0);
    expect(readFileSync(file(), "utf8")).toBe(written);
    writeFileSync(file(), "[]\n");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(
      /m3:~\/prometheus\/sm121\.json was changed there \(sha256 [0-9a-f]{12}, written [0-9a-f]{12}\)/,
    );
    expect(readFileSync(file(), "utf8")).toBe(written);
    const backups = readdirSync(join(m3.home, "prometheus")).filter((f) => f.startsWith("sm121.json.sm121-bak-"));
    expect(backups.map((f) => readFileSync(join(m3.home, "prometheus", f), "utf8"))).toEqual(["[]\n"]);
    // Unchanged since: the next up has nothing to do.
    expect((await e.preview()).all).not.toContain("scrape-targets");
  });

  it("labels follow a node move after one up, and a downed deployment's targets leave the file", async () => {
    e.reconfigure(config("m2", "m1"));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(groups().map((g) => [g.labels["deployment"], g.labels["node"], g.targets[0]])).toEqual([
      ["chat", "m2", `${m2.ip}:8000`],
      ["code", "m1", `${m1.ip}:30000`],
    ]);
    await eventually("the moved targets up", targets, (t) => t.join() === ["chat m2 up", "code m1 up"].join());
    const down = await e.up({ SM121_DOWN: "code" });
    expect(down.code, down.all).toBe(0);
    expect(groups().map((g) => g.labels["deployment"])).toEqual(["chat"]);
    await eventually("code's target gone", targets, (t) => t.join() === "chat m2 up");
    expect(existsSync(file())).toBe(true);
  });
});
