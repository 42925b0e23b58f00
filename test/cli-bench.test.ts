/**
 * The bench client: SSE parsing, the text fast path, percentiles and the progress bar as units;
 * then real runs against the test site's fake engine started on this machine (one that answers
 * at once, one at 200 tokens/s): counts, errors, inter-token latency, the --json schema, and the
 * counts at concurrency 64. How fast it is belongs to `npm run bench`; nothing here asserts speed.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { get } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SseParser, hasText, promptText, runLoad } from "../src/serve/loadclient";
import { Samples, percentile, summarize } from "../src/serve/loadstats";
import { Progress } from "../src/cli/progress";
import { benchSchema } from "../src/cli/schemas";
import { json, sm121, type CliTarget } from "./cli-helpers";
import { allocate } from "./site/alloc";

describe("SseParser", () => {
  const events = (chunks: string[]) => {
    const p = new SseParser();
    const out: string[] = [];
    for (const c of chunks) p.push(c, (d) => out.push(d));
    return out;
  };

  it("delivers each event's data when its blank line arrives, across chunk boundaries", () => {
    expect(events(['data: {"a":1}\n\ndata: {"b"', ":2}\n", "\n", "data: [DONE]\n\n"])).toEqual([
      '{"a":1}',
      '{"b":2}',
      "[DONE]",
    ]);
    expect(events(["da", "ta: x", "\n", "\n"])).toEqual(["x"]);
    expect(events(["data: x\n"])).toEqual([]);
  });

  it("reads CRLF, data without a space, several data lines, and ignores comments and other fields", () => {
    expect(events(["data: a\r\n\r\n", "data:b\n\n"])).toEqual(["a", "b"]);
    expect(events(["data: one\ndata: two\n\n"])).toEqual(["one\ntwo"]);
    expect(events([": keep-alive\n\n", "event: message\nid: 7\ndata: x\n\n"])).toEqual(["x"]);
  });
});

describe("hasText", () => {
  it("recognizes a text chunk without parsing, and hands everything else to JSON.parse", () => {
    expect(hasText('{"choices":[{"index":0,"delta":{"content":" fox"},"finish_reason":null}]}')).toBe(true);
    expect(hasText('{"choices":[{"delta":{"reasoning_content":"hm"}}]}')).toBe(true);
    expect(hasText('{"choices":[{"delta":{"role":"assistant","content":""}}]}')).toBeUndefined();
    expect(hasText('{"choices":[{"delta":{},"finish_reason":"length"}]}')).toBeUndefined();
    expect(hasText('{"choices":[],"usage":{"completion_tokens":16}}')).toBeUndefined();
    expect(hasText('{"choices":[{"delta":{"content": "spaced"}}]}')).toBeUndefined();
    expect(hasText('{"error":{"message":"boom"}}')).toBeUndefined();
  });
});

describe("latency summaries", () => {
  it("takes nearest-rank percentiles", () => {
    const v = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect([percentile(v, 50), percentile(v, 90), percentile(v, 99), percentile(v, 100)]).toEqual([50, 90, 99, 100]);
    expect(percentile(new Float64Array(0), 50)).toBe(0);
    expect(percentile(Float64Array.of(7), 99)).toBe(7);
  });

  it("summarizes unsorted samples, growing past the first buffer", () => {
    const s = new Samples();
    for (let i = 5000; i >= 1; i--) s.push(i / 10);
    expect(summarize(s)).toEqual({ count: 5000, mean: 250.05, min: 0.1, p50: 250, p90: 450, p99: 495, max: 500 });
    expect(summarize(new Samples())).toEqual({ count: 0, mean: 0, min: 0, p50: 0, p90: 0, p99: 0, max: 0 });
  });

  it("writes prompts of the asked length", () => {
    expect(promptText(300).split(" ")).toHaveLength(300);
    expect(promptText(0)).toBe("");
  });
});

describe("Progress", () => {
  const stream = () => {
    const writes: string[] = [];
    return { writes, s: { isTTY: true, columns: 100, write: (x: string) => writes.push(x) > 0 } };
  };

  it("draws on a terminal, at most ten times a second, and clears its line at the end", () => {
    const { writes, s } = stream();
    let now = 1_000_000;
    const p = new Progress(10, s, true, () => now);
    now += 500;
    p.update(1, 0);
    now += 99;
    p.update(2, 0); // within 0.1 s of the last draw: not drawn
    now += 1;
    p.update(3, 0);
    now += 10;
    p.update(10, 0, true); // the last one is always drawn
    p.finish();
    expect(writes).toHaveLength(4);
    expect(writes[0]).toMatch(/^\r\[#{4}-{36}\] 1\/10 requests, 2\.0 req\/s, 0 errors/);
    expect(writes[1]).toMatch(/^\r\[#{12}-{28}\] 3\/10 requests, 5\.0 req\/s/);
    expect(writes[2]).toMatch(/^\r\[#{40}\] 10\/10 requests/);
    expect(writes[3]).toBe("\r\x1b[K");
  });

  it("draws nothing when the output is not a terminal", () => {
    const { writes, s } = stream();
    const p = new Progress(10, s, false);
    p.update(5, 0, true);
    p.finish();
    expect(writes).toEqual([]);
  });
});

/** A fake engine of the test site, run on this machine as a node would run it. */
function startEngine(root: string, ip: string, behaviour: Record<string, unknown>): ChildProcess {
  mkdirSync(join(root, "etc"), { recursive: true });
  writeFileSync(join(root, "etc", "fake-engine.json"), JSON.stringify(behaviour));
  const engine = join(__dirname, "site", "shims", "fake-engine.js");
  const args = [
    engine,
    "vllm",
    "serve",
    "Qwen/Qwen3-0.6B",
    "--served-model-name",
    "bench-model",
    "--host",
    ip,
    "--port",
    "8000",
    "--max-model-len",
    "4096",
  ];
  return spawn(process.execPath, args, {
    env: { ...process.env, SIM_NODE_ROOT: root, SIM_NODE_IP: ip, SIM_NODE_NAME: "bench" },
    stdio: ["ignore", "ignore", "ignore"],
  });
}

function healthy(url: string): Promise<boolean> {
  return new Promise((resolve) => {
    get(`${url}/health`, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    }).on("error", () => resolve(false));
  });
}

describe("against the fake engine", () => {
  // Addresses of this file's own (test/site/alloc.ts); each engine on its real default port.
  const AT = allocate(__filename);
  const FAST_IP = AT.host(0);
  const PACED_IP = AT.host(1);
  const FAST = `http://${FAST_IP}:8000`;
  const PACED = `http://${PACED_IP}:8000`;
  const DOWN = `http://${AT.host(2)}:8000`;
  let dir = "";
  const engines: ChildProcess[] = [];
  // bench --url needs no project and no ssh.
  let e: CliTarget;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sm121-clibench-"));
    engines.push(startEngine(join(dir, "fast"), FAST_IP, { tokensPerSecond: 0 }));
    engines.push(startEngine(join(dir, "paced"), PACED_IP, { tokensPerSecond: 200 }));
    for (const url of [FAST, PACED]) {
      for (let i = 0; i < 100 && !(await healthy(url)); i++) await new Promise((r) => setTimeout(r, 100));
      expect(await healthy(url)).toBe(true);
    }
    e = { dir, stack: "none", site: { clientKey: join(dir, "no-key") } };
  }, 60_000);

  afterAll(async () => {
    // Each engine records its stop in its node's run/ at exit: the directory goes after they end.
    const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;
    const ended = engines.map((c) => (exited(c) ? Promise.resolve() : new Promise((r) => c.once("exit", r))));
    for (const c of engines) if (c.pid !== undefined) c.kill("SIGTERM");
    await Promise.all(ended);
    rmSync(dir, { recursive: true, force: true });
  });

  it("counts requests and tokens, with sane percentiles, in --json that matches its schema", async () => {
    const r = await sm121(e, [
      "bench",
      "--url",
      FAST,
      "--requests",
      "300",
      "--concurrency",
      "16",
      "--max-tokens",
      "24",
      "--prompt-tokens",
      "64",
      "--json",
    ]);
    expect(r.code, r.stderr).toBe(0);
    const b = benchSchema().parse(json(r));
    expect(b).toMatchObject({
      deployment: null,
      urls: [FAST],
      model: "bench-model",
      requests: 300,
      completed: 300,
      errors: 0,
      outputTokens: 300 * 24,
    });
    for (const l of [b.ttftMs, b.itlMs, b.e2eMs])
      expect(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max).toBe(true);
    expect(b.itlMs.count).toBe(300 * 23);
  });

  it("measures inter-token latency at the engine's pace (200 tokens/s: 5 ms)", async () => {
    const r = await runLoad({
      urls: [PACED],
      model: "bench-model",
      concurrency: 4,
      requests: 12,
      promptTokens: 8,
      maxTokens: 20,
      timeoutMs: 30_000,
    });
    expect(r).toMatchObject({ completed: 12, errors: 0, outputTokens: 240 });
    // Lower bounds only: the engine cannot be faster than its pace, a loaded machine only slower.
    const itl = summarize(r.itl);
    expect(itl.count).toBe(12 * 19);
    expect(itl.p50).toBeGreaterThan(3);
    expect(summarize(r.e2e).min).toBeGreaterThan(19 * 4);
  });

  it("counts errors, and exits 1 when there are any", async () => {
    const r = await sm121(e, [
      "bench",
      "--url",
      FAST,
      "--model",
      "no-such-model",
      "--requests",
      "10",
      "--concurrency",
      "2",
      "--json",
    ]);
    expect(r.code).toBe(1);
    const b = benchSchema().parse(json(r));
    expect(b).toMatchObject({ completed: 0, errors: 10 });
    expect(b.errorSamples[0]).toMatch(/^HTTP 404: .*does not exist/);
    const down = await sm121(e, ["bench", "--url", DOWN, "--requests", "1"]);
    expect(down.code).toBe(1);
    expect(down.stderr).toContain(`${DOWN}/v1/models does not answer 200: connect ECONNREFUSED`);
    const bad = await sm121(e, ["bench", "--url", `${FAST},ftp://${FAST_IP}`, "--requests", "1"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(`--url ftp://${FAST_IP} is not an http:// or https:// URL`);
  });

  it("spreads requests round robin over several --url endpoints", async () => {
    // Every second request goes to an address where nothing listens: the counts show the order.
    const r = await runLoad({
      urls: [FAST, DOWN],
      model: "bench-model",
      concurrency: 2,
      requests: 5,
      promptTokens: 8,
      maxTokens: 10,
      timeoutMs: 30_000,
    });
    expect(r).toMatchObject({ completed: 3, errors: 2, outputTokens: 30 });
    expect(r.errorSamples).toHaveLength(2);
    for (const e of r.errorSamples) expect(e).toMatch(/ECONNREFUSED/);
  });

  it("keeps count at concurrency 64: every request and token, none lost, percentiles in order", async () => {
    // Its speed is measured by `npm run bench` (bench/README.md), not here: the suite shares two cores.
    const r = await runLoad({
      urls: [FAST],
      model: "bench-model",
      concurrency: 64,
      requests: 640,
      promptTokens: 128,
      maxTokens: 128,
      timeoutMs: 300_000,
    });
    expect(r).toMatchObject({ completed: 640, errors: 0, outputTokens: 640 * 128 });
    expect([r.ttft.length, r.e2e.length, r.itl.length]).toEqual([640, 640, 640 * 127]);
    for (const l of [summarize(r.ttft), summarize(r.itl), summarize(r.e2e)])
      expect(l.min <= l.p50 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.max).toBe(true);
  });
});
