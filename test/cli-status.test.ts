/**
 * `sm121 status` on the simulated site after a real `pulumi up`: every field from real nodes, the
 * protected-node rules proven with the fake engine's request log, drift after a hand edit, the KV
 * cache line after the log has rotated, and the JSON against its schema.
 */
import { existsSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { statusSchema, type StatusReport } from "../src/cli/schemas";
import { translator } from "../src/text/messages";
import { cells } from "../src/cli/table";
import { API_KEY, json, probeMark, servedSite, sm121, tableRows, type CliSite } from "./cli-helpers";
import { sshScript } from "./site/exec";
import type { SimNode } from "./site/site";
import { containing, matching } from "./helpers/json";

const AT = allocate(__filename);

let s: CliSite;

/** A cell's text without its line breaks and spaces. */
const squash = (text: string | undefined) => (text ?? "").replace(/\s+/g, "");

beforeAll(async () => {
  s = await servedSite("clistatus", AT.site());
}, 300_000);

afterAll(() => s?.e.stop());

async function sh(n: SimNode, script: string): Promise<string> {
  const r = await sshScript(s.e.site, n, script);
  return r.stdout;
}

/** Requests the fake engine of `solo` on spark1 has logged (its access log is the container log). */
async function requestsSeen(): Promise<number> {
  const out = await sh(s.nodes[0], "docker logs sm121-solo-0 2>&1 | grep -c 'HTTP/1.1\" ' || true");
  return Number(out.trim());
}

async function status(
  args: string[] = [],
  env?: Record<string, string>,
): Promise<{ code: number | null; report: StatusReport; stderr: string }> {
  const r = await sm121(s.e, ["status", "--json", ...args], env === undefined ? {} : { env });
  return { code: r.code, report: statusSchema().parse(json(r)), stderr: r.stderr };
}

const entry = (r: StatusReport, deployment: string) => {
  const e = r.deployments.find((d) => d.deployment === deployment)?.nodes[0];
  if (e === undefined) throw new Error(`no ${deployment} in ${JSON.stringify(r)}`);
  return e;
};

describe("sm121 status", () => {
  it("shows every node of every deployment: state, drift, health, KV cache, memory, watermark, GPU apps", async () => {
    const { code, report } = await status();
    expect(code).toBe(0);
    expect(report.ok).toBe(true);
    expect(report.deployments.map((d) => d.deployment)).toEqual(["solo", "flash", "small"]);
    const solo = entry(report, "solo");
    expect(solo).toMatchObject({
      node: "spark1",
      protected: true,
      target: { kind: "docker", name: "sm121-solo-0" },
      running: true,
      drift: null,
      env: null,
      error: null,
    });
    expect(solo.health).toEqual({ checked: false, reason: "protected" });
    expect(solo.kvCache).toMatchObject({ source: "log", tokens: "1,234,567", device: "GPU" });
    // Where the last start's time went, as the up left it on the node: the fake engine's load line read.
    expect(solo.ready).toMatchObject({ totalS: expect.any(Number) as unknown, loadS: expect.any(Number) as unknown });
    // Load is read from /metrics: an HTTP request, which a protected node gets only with --yes.
    expect(solo.load).toEqual({ measured: false, reason: "protected", detail: null });
    const flash = entry(report, "flash");
    expect(flash).toMatchObject({ target: { kind: "script", name: "qwen38-flash" }, running: true, drift: null });
    expect(flash.env).toMatchObject({ path: "~/spark-recipes/qwen38-flash/.env", profile: "datagen", edited: false });
    expect(flash.env?.sha256).toMatch(/^[0-9a-f]{64}$/);
    // The engine requires the key: a health of 200 means status read it on the node and gave it to curl.
    expect(flash.health).toMatchObject({
      checked: true,
      ok: true,
      httpCode: 200,
      models: ["qwen38"],
      maxModelLen: 262144,
    });
    const small = entry(report, "small");
    expect(small).toMatchObject({
      target: { kind: "tmux", name: "sm121-small-0" },
      running: true,
      drift: null,
      health: { checked: true, ok: true, models: ["qwen3-small"] },
    });
    const idle = { measured: true, running: 0, waiting: 0, generationTokensPerS: 0 };
    for (const e of [flash, small]) expect(e.load).toMatchObject(idle);
    expect(report.deployments.find((d) => d.deployment === "flash")?.profile).toBe("datagen");
    for (const n of report.nodes) {
      expect(n).toMatchObject({ reachable: true, watermarkScaleFactor: "10", memGateGiB: 1, gpuProbe: null });
      expect(n.memAvailableGiB).toBeGreaterThan(0);
      expect(n.gpuApps).toEqual([expect.objectContaining({ name: "VLLM::EngineCore" })]);
    }
  });

  it("the engine of flash refuses a request without the key (so the health check above used it)", async () => {
    const code = await sh(s.nodes[1], `curl -s -o /dev/null -w '%{http_code}' http://${s.nodes[1].ip}:8000/v1/models`);
    expect(code).toBe("401");
    const withKey = await sh(
      s.nodes[1],
      `curl -s -o /dev/null -w '%{http_code}' -H 'Authorization: Bearer ${API_KEY}' ` +
        `http://${s.nodes[1].ip}:8000/v1/models`,
    );
    expect(withKey).toBe("200");
  });

  it("prints a table in the operator's language", async () => {
    const en = await sm121(s.e, ["status"]);
    expect(en.code, en.stderr).toBe(0);
    expect(en.stdout).toMatch(/NODE +RANK +STATE +DRIFT +HEALTH +KV CACHE/);
    // The first table is solo's; what its cells say, however they wrapped to fit 100 columns.
    const [solo] = tableRows(en.stdout, "NODE");
    expect(solo).toEqual({
      NODE: "spark1 (protected)",
      RANK: "0",
      STATE: matching(/^running sm121-solo-0 since \S+$/),
      DRIFT: "none",
      HEALTH: "not asked: protected node (--yes)",
      "KV CACHE": "1,234,567 tokens on the GPU (from the log)",
    });
    const tableLines = en.stdout.split("\n").filter((l) => !/^ {2}\S+ \.env: /.test(l));
    expect(tableLines.filter((l) => cells(l) > 100)).toEqual([]);
    expect(en.stdout).toMatch(/spark2 \.env: ~\/spark-recipes\/qwen38-flash\/\.env: profile datagen/);
    expect(en.stdout).toMatch(/^ {2}spark1: last ready in [\d.]+ s: .*load [\d.]+ s, first token [\d.]+ s$/m);
    const ru = await sm121(s.e, ["status"], {
      env: { SM121_LANG: "", LC_ALL: "", LC_MESSAGES: "", LANG: "ru_RU.UTF-8" },
    });
    expect(ru.stdout).toMatch(/УЗЕЛ +РАНГ +СОСТОЯНИЕ/);
    const ruT = translator("ru");
    expect(tableRows(ru.stdout, ruT("status.colNode"))[0]?.[ruT("status.colHealth")]).toMatch(
      /^не запрошено: защищённый узел/,
    );
    const ja = await sm121(s.e, ["status", "--node", "spark3"], { env: { SM121_LANG: "ja" } });
    expect(ja.stdout).toMatch(/ノード +ランク +状態/);
  });

  it("sends no HTTP request to a protected node without --yes, also without --node; with --yes it does", async () => {
    const before = await requestsSeen();
    expect(before).toBeGreaterThan(0); // pulumi up's readiness probes
    for (const args of [[], ["--node", "spark1"]]) {
      const { report } = await status(args);
      expect(entry(report, "solo").health).toEqual({ checked: false, reason: "protected" });
      expect(entry(report, "solo").kvCache?.source).toBe("log");
    }
    expect((await sm121(s.e, ["status"])).code).toBe(0);
    expect(await requestsSeen()).toBe(before);

    const { report } = await status(["--yes"]);
    expect(entry(report, "solo").health).toMatchObject({
      checked: true,
      ok: true,
      httpCode: 200,
      models: ["qwen3-8b"],
      maxModelLen: 16384,
    });
    expect(entry(report, "solo").load).toMatchObject({ measured: true, running: 0, waiting: 0 });
    expect(entry(report, "solo").live).toMatchObject({ verdict: "ok", timeoutS: 10 });
    // /v1/models for health; the load's two reads of /metrics; then liveness: /v1/models,
    // /metrics, a 1-token chat (the counters again only after a completion that failed).
    expect(await requestsSeen()).toBe(before + 6);
  });

  it("--no-http asks no node's API", async () => {
    const smallLog = () => sh(s.nodes[2], "grep -c 'HTTP/1.1\" ' ~/.sm121/deployments/small/logs/engine.log || true");
    const before = await smallLog();
    const { report } = await status(["--no-http", "--yes"]);
    for (const d of report.deployments) expect(d.nodes[0]?.health).toEqual({ checked: false, reason: "no-http" });
    const load = { measured: false, reason: "no-http", detail: null };
    for (const d of report.deployments) expect(d.nodes[0]?.load).toEqual(load);
    expect(await smallLog()).toBe(before);
  });

  it("--gpu-probe runs only when asked, and refuses a protected node without --yes", async () => {
    const [n1, n2] = s.nodes;
    await status();
    expect(existsSync(probeMark(n1)) || existsSync(probeMark(n2))).toBe(false);

    const refused = await sm121(s.e, ["status", "--gpu-probe"]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toMatch(/--gpu-probe refuses protected node\(s\) spark1 without --yes/);
    expect(refused.stdout).toBe("");
    expect(existsSync(probeMark(n1)) || existsSync(probeMark(n2))).toBe(false);

    const other = await status(["--gpu-probe", "--node", "spark2"]);
    expect(other.report.nodes).toHaveLength(1);
    expect(other.report.nodes[0]?.gpuProbe).toMatchObject({ ran: true, code: 0, output: containing("NVIDIA GB10") });
    expect(existsSync(probeMark(n2))).toBe(true);
    expect(existsSync(probeMark(n1))).toBe(false);

    const yes = await status(["--gpu-probe", "--yes", "--node", "spark1"]);
    expect(yes.report.nodes[0]?.gpuProbe).toMatchObject({ ran: true, code: 0 });
    expect(existsSync(probeMark(n1))).toBe(true);

    const none = await status(["--gpu-probe", "--node", "spark3"]);
    expect(none.report.nodes[0]?.gpuProbe).toEqual({ ran: false, reason: "not-configured" });
  });

  it("shows drift after a hand edit of a node file", async () => {
    await sh(s.nodes[1], "printf 'MAX_NUM_SEQS=\"16\"\\n' >> ~/spark-recipes/qwen38-flash/.env");
    const { code, report } = await status(["--node", "spark2"]);
    expect(code).toBe(1);
    expect(report.ok).toBe(false);
    const flash = entry(report, "flash");
    expect(flash.drift).toEqual({ kind: "edited", files: ["~/spark-recipes/qwen38-flash/.env"] });
    expect(flash.env).toMatchObject({ profile: "datagen", edited: true });
    const text = await sm121(s.e, ["status", "--node", "spark2"]);
    // A path longer than its column is cut across lines: compare without the breaks.
    expect(squash(tableRows(text.stdout, "NODE")[0]?.DRIFT)).toBe(
      squash("edited on the node: ~/spark-recipes/qwen38-flash/.env"),
    );
    expect(text.stdout).toMatch(/\(edited after the render\)/);
  });

  it("takes the KV cache line saved at up when the log has rotated, and says so", async () => {
    // Docker rotates the json log at 50 MB, 3 files (the nodes' dockerd, as a Spark's): after 150 MB
    // the load's lines are gone from `docker logs`. Emptying the container's log file has that effect.
    await sh(s.nodes[0], 'for f in "$SIM_NODE_ROOT"/docker/data/containers/*/*-json.log; do : > "$f"; done');
    expect(await sh(s.nodes[0], "docker logs sm121-solo-0 2>&1 | grep -c 'KV cache' || true")).toBe("0\n");
    const { report } = await status(["--node", "spark1"]);
    expect(entry(report, "solo").kvCache).toEqual({
      line: containing("GPU KV cache size: 1,234,567 tokens"),
      tokens: "1,234,567",
      device: "GPU",
      source: "saved",
    });
    const text = await sm121(s.e, ["status", "--node", "spark1"]);
    expect(squash(tableRows(text.stdout, "NODE")[0]?.["KV CACHE"])).toBe(
      squash("1,234,567 tokens on the GPU (saved at up; the log has rotated)"),
    );
  });

  it("reports an unknown --node as a usage error", async () => {
    const r = await sm121(s.e, ["status", "--node", "spark9"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no node "spark9" in the site; nodes: spark1, spark2, spark3/);
  });
});
