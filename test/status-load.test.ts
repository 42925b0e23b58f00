/**
 * The load of `sm121 status`, from the records its node script prints: the engine's gauges as
 * the second read left them, tokens per second between the two reads by the node's clock, a
 * counter that went back (a restarted engine) as unknown; the load table within a width, and
 * `--watch`'s frame within the terminal's.
 */
import { describe, expect, it } from "vitest";
import { DRIVERS } from "../src/engines";
import type { MetricSeries } from "../src/engines/driver";
import { loadOf, loadScript, loadText } from "../src/cli/load";
import { statusSchema, type StatusReport } from "../src/cli/schemas";
import { cells } from "../src/cli/table";
import { loadOptions, watchFrame } from "../src/cli/watch";
import { parseArgs } from "../src/cli/args";
import { flagSpec } from "../src/cli/usage";

const VLLM = DRIVERS.vllm.metrics?.series as MetricSeries;
const SGLANG = DRIVERS.sglang.metrics?.series as MetricSeries;
const rec = (at: string, text: string, http = "200") => ({
  kind: "load" as const,
  at,
  http,
  lines: Buffer.from(text).toString("base64"),
});

describe("the load of one engine", () => {
  const first = [
    'vllm:num_requests_running{model_name="m",engine="0"} 1.0',
    'vllm:generation_tokens_total{model_name="m",engine="0"} 100.0',
    'vllm:prompt_tokens_total{model_name="m",engine="0"} 40.0',
  ].join("\n");
  const second = [
    'vllm:num_requests_running{model_name="m",engine="0"} 2.0',
    'vllm:num_requests_waiting{model_name="m",engine="0"} 3.0',
    'vllm:kv_cache_usage_perc{model_name="m",engine="0"} 0.25',
    'vllm:generation_tokens_total{model_name="m",engine="0"} 180.0',
    'vllm:prompt_tokens_total{model_name="m",engine="0"} 72.0',
  ].join("\n");

  it("reads the gauges of the second read, and tokens per second over the interval", () => {
    expect(loadOf([rec("1700000000.500000", first), rec("1700000002.500000", second)], VLLM)).toEqual({
      measured: true,
      running: 2,
      waiting: 3,
      kvCacheUsage: 0.25,
      promptTokensPerS: 16,
      generationTokensPerS: 40,
      intervalS: 2,
    });
  });

  it("adds a family's label sets up (SGLang splits its counters by is_streaming)", () => {
    const a =
      'sglang:generation_tokens_total{model_name="m",engine_type="unified",is_streaming="true"} 10.0\n' +
      'sglang:generation_tokens_total{model_name="m",engine_type="unified",is_streaming="false"} 5.0\n';
    // Before the first request SGLang has no counter at all: it counts as zero.
    expect(loadOf([rec("10,0", ""), rec("11,0", a)], SGLANG)).toMatchObject({
      measured: true,
      generationTokensPerS: 15,
      running: 0,
      kvCacheUsage: null,
      intervalS: 1,
    });
  });

  it("says unknown for a counter that went back, and failed for an engine that did not answer", () => {
    expect(loadOf([rec("1.0", second), rec("2.0", first)], VLLM)).toMatchObject({
      generationTokensPerS: null,
      promptTokensPerS: null,
    });
    expect(loadOf([rec("1.0", first), rec("2.0", "", "000")], VLLM)).toEqual({
      measured: false,
      reason: "failed",
      detail: "no answer",
    });
    expect(loadOf([rec("1.0", "", "404"), rec("2.0", "", "404")], VLLM)).toEqual({
      measured: false,
      reason: "failed",
      detail: "HTTP 404",
    });
    expect(loadOf([], VLLM)).toMatchObject({ measured: false, reason: "failed" });
  });

  it("is unknown (null) for a series whose value is no finite number, and for a read that does not parse", () => {
    const broken = [
      'vllm:num_requests_running{model_name="m",engine="0"} NaN',
      'vllm:num_requests_waiting{model_name="m",engine="0"} 1e3',
      'vllm:generation_tokens_total{model_name="m",engine="0"} +Inf',
      'vllm:prompt_tokens_total{model_name="m",engine="0"} 72.0',
    ].join("\n");
    expect(loadOf([rec("1.0", first), rec("2.0", broken)], VLLM)).toEqual({
      measured: true,
      running: null,
      waiting: 1000,
      kvCacheUsage: null,
      promptTokensPerS: 32,
      generationTokensPerS: null,
      intervalS: 1,
    });
    expect(loadOf([rec("1.0", first), rec("2.0", "vllm:num_requests_running{")], VLLM)).toMatchObject({
      running: null,
      generationTokensPerS: null,
    });
  });

  it("sends the lines that name the driver's series from the node, quoted", () => {
    const s = loadScript("http://127.0.0.1:8000/metrics", VLLM, 2);
    expect(s).toContain(
      "grep -F -e vllm:num_requests_running -e vllm:num_requests_waiting -e vllm:kv_cache_usage_perc " +
        "-e vllm:prompt_tokens_total -e vllm:generation_tokens_total",
    );
    expect(s).toContain("curl -s -o \"$body\" -w '%{http_code}' --max-time 5 http://127.0.0.1:8000/metrics");
    expect(s).toContain("sample; sleep 2; sample");
  });
});

describe("the load table", () => {
  const entry = (deployment: string, node: string, load: unknown) => ({
    deployment,
    node,
    rank: 0,
    protected: false,
    target: { kind: "docker", name: null },
    runs: true,
    running: true,
    startedAt: null,
    drift: null,
    env: null,
    health: { checked: false, reason: "no-http" },
    live: null,
    kvCache: null,
    ready: null,
    between: [],
    load,
    error: null,
  });
  const report: StatusReport = statusSchema().parse({
    stack: "sim",
    ok: true,
    nodes: [],
    deployments: [
      {
        deployment: "a-long-deployment-name",
        recipe: "r",
        engine: "vllm",
        deploy: "docker",
        profile: null,
        nodes: [
          entry("a-long-deployment-name", "spark1", {
            measured: true,
            running: 2,
            waiting: 1,
            kvCacheUsage: 0.125,
            promptTokensPerS: 12.5,
            generationTokensPerS: 80,
            intervalS: 2,
          }),
        ],
      },
      {
        deployment: "d",
        recipe: "d",
        engine: "dgpp",
        deploy: "native",
        profile: null,
        nodes: [
          entry("d", "spark2", { measured: false, reason: "no-metrics", detail: null }),
          entry("d", "spark3", { measured: false, reason: "no-api", detail: null }),
        ],
      },
    ],
  });

  it("shows each node that answers an API, numbers or why not, within the width", () => {
    const lines = loadText(report);
    expect(lines[0]).toBe("load over 2 s (the engines' /metrics)");
    expect(lines.slice(1)).toEqual([
      "  DEPLOYMENT              NODE    RUNNING  WAITING  KV CACHE USE  PROMPT TOK/S  GEN TOK/S",
      "  a-long-deployment-name  spark1  2        1        12.5%         12.5          80.0",
      "  d                       spark2  -        -        -             -             -",
      "  d spark2: no Prometheus metrics",
    ]);
    const narrow = loadText(report, 84);
    for (const l of narrow) expect(cells(l), l).toBeLessThanOrEqual(84);
    // The deployment's name gives way and wraps; the numbers stay whole.
    expect(narrow).toContain("  a-long-deployment  spark1  2        1        12.5%         12.5          80.0");
  });

  it("--watch's frame fits the terminal", () => {
    const frame = watchFrame(report, 40, new Date("2026-12-01T10:00:00Z"));
    expect(frame[0]).toBe("sm121 status --watch: stack sim, 10:00:…");
    for (const l of frame) expect(cells(l), l).toBeLessThanOrEqual(40);
    expect(frame.join("\n")).toContain("spark1");
  });
});

describe("status' load flags", () => {
  const options = (...argv: string[]) =>
    loadOptions(parseArgs(argv, flagSpec("status")), { yes: false, noHttp: false });

  it("measures over --interval seconds, 2 unless given, above 0 and at most 60", () => {
    expect(options().intervalS).toBe(2);
    expect(options("--interval", "0.5").intervalS).toBe(0.5);
    expect(() => options("--interval", "0")).toThrow("--interval 0: give seconds above 0 and at most 60");
    expect(() => options("--interval", "61")).toThrow("--interval 61: give seconds above 0 and at most 60");
  });

  it("refuses --watch with --json: one draws again and again, the other prints one report", () => {
    expect(() => options("--watch", "--json")).toThrow(
      "--watch draws the table again and again, --json prints one report",
    );
  });
});
