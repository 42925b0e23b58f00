/**
 * The engines' Prometheus metrics: the series each driver names are real families of the engine
 * it serves (src/engines/metrics/, extracted from vLLM 0.33.0 and SGLang 0.5.23 with the versions
 * of the option tables), with the types their use needs; the flag that turns an exporter on is
 * one the engine's real parser takes; the test site's fake engines export those families, with
 * values that follow the requests they run and queue; dashboards/sm121.json is the render of the
 * drivers' series.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DRIVERS } from "../src/engines";
import type { MetricSeries } from "../src/engines/driver";
import { SGLANG_OPTIONS, VLLM_OPTIONS } from "../src/engines/options/table";
import { dashboardJson, dashboardPanels } from "../src/render/dashboard";
import sglangMetrics from "../src/engines/metrics/sglang-0.5.23.json";
import vllmMetrics from "../src/engines/metrics/vllm-0.33.0.json";

interface Family {
  name: string;
  type: string;
  labels: string[];
  samples: string[];
}
interface Exporter {
  begin(prompt: number, stream: boolean): { admitted: Promise<void>; token(): void; end(reason: string): void };
  text(): string;
}

const DATA: Record<string, { version: string; metrics: Family[] }> = {
  vllm: vllmMetrics,
  sglang: sglangMetrics,
  gr8: vllmMetrics,
};
const TABLES: Record<string, { version: string }> = { vllm: VLLM_OPTIONS, sglang: SGLANG_OPTIONS };
const TYPES: Record<keyof MetricSeries, string> = {
  running: "gauge",
  waiting: "gauge",
  kvUsage: "gauge",
  promptTokens: "counter",
  generationTokens: "counter",
  requests: "counter",
  ttft: "histogram",
  itl: "histogram",
  e2e: "histogram",
};

/** The family whose exposition carries `sample` (a counter's `_total`, a histogram's `_bucket`). */
function familyOf(engine: string, sample: string): Family | undefined {
  return DATA[engine]?.metrics.find((m) => m.samples.includes(sample));
}

describe("the drivers' metrics", () => {
  const exporting = Object.values(DRIVERS).filter((d) => d.metrics !== undefined);

  it("every engine but DGPP (JSON /metrics) exports Prometheus metrics", () => {
    expect(exporting.map((d) => d.name)).toEqual(["vllm", "sglang", "gr8"]);
  });

  it.each(exporting.map((d) => [d.name, d] as const))(
    "%s names real families of its engine, of the types their use needs",
    (name, d) => {
      const series = d.metrics?.series as MetricSeries;
      for (const [role, type] of Object.entries(TYPES) as Array<[keyof MetricSeries, string]>) {
        const sample = type === "histogram" ? `${series[role]}_bucket` : series[role];
        expect(familyOf(name, sample)?.type, `${role}: ${series[role]}`).toBe(type);
      }
    },
  );

  it("the metric data and the option tables come from the same engine versions", () => {
    expect([vllmMetrics.version, sglangMetrics.version]).toEqual([VLLM_OPTIONS.version, SGLANG_OPTIONS.version]);
  });

  it.each(exporting.map((d) => [d.name, d] as const))(
    "%s's exporter flags are ones its real parser takes, and no recipe rule refuses",
    (name, d) => {
      const flags = d.metrics?.flags ?? [];
      expect([...d.checkArgs(flags)]).toEqual([]);
      const table = TABLES[name] as { options?: Array<{ spellings: string[] }> } | undefined;
      for (const f of flags)
        expect(
          table?.options?.some((o) => o.spellings.includes(f)),
          f,
        ).toBe(true);
    },
  );

  it("SGLang needs --enable-metrics; vLLM exports without a flag", () => {
    expect(DRIVERS.sglang.metrics?.flags).toEqual(["--enable-metrics"]);
    expect(DRIVERS.vllm.metrics?.flags).toEqual([]);
  });
});

describe("the fake engines' exporter", () => {
  // The test site's own module (plain CommonJS, as the shims run it).
  const { createExporter } = require(join(__dirname, "site", "shims", "engine", "exporter.js")) as {
    createExporter: (
      plan: { engine: string; served: string[] },
      limits: { maxRunning: number; kvTokens: number },
    ) => Exporter;
  };
  /** name{labels} -> value of a text exposition. */
  const samples = (text: string) =>
    new Map(
      text
        .split("\n")
        .filter((l) => l !== "" && !l.startsWith("#"))
        .map((l) => [l.slice(0, l.lastIndexOf(" ")), Number(l.slice(l.lastIndexOf(" ") + 1))]),
    );
  const sum = (text: string, name: string) =>
    [...samples(text)].filter(([k]) => k === name || k.startsWith(`${name}{`)).reduce((a, [, v]) => a + v, 0);

  it.each(["vllm", "sglang"])("%s: every family it prints is the engine's own, with its type and labels", (engine) => {
    const x = createExporter({ engine, served: ["m"] }, { maxRunning: 4, kvTokens: 1000 });
    const r = x.begin(5, true);
    r.token();
    r.end("stop");
    const text = x.text();
    const types = [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1] ?? "", m[2] ?? ""]);
    expect(types.length).toBeGreaterThanOrEqual(9);
    for (const [name = "", type] of types) {
      // prometheus_client prints a counter's or histogram's creation time as a gauge of its own.
      const f = familyOf(engine, name) ?? familyOf(engine, `${name}_bucket`);
      expect(name.endsWith("_created") ? "gauge" : f?.type, name).toBe(type);
      expect(f, name).toBeDefined();
    }
    for (const line of text.split("\n").filter((l) => /^\w+:\w+\{/.test(l))) {
      const name = line.slice(0, line.indexOf("{"));
      const f = familyOf(engine, name);
      const labels = [...line.matchAll(/(\w+)="/g)].map((m) => m[1]).filter((l) => l !== "le");
      expect(labels, line).toEqual(f?.labels);
    }
  });

  it("runs up to its limit and queues the rest, counts tokens as they go, and times each request", async () => {
    const x = createExporter({ engine: "vllm", served: ["m"] }, { maxRunning: 2, kvTokens: 100 });
    const reqs = [x.begin(10, true), x.begin(10, false), x.begin(10, true)];
    const at = (name: string) => sum(x.text(), name);
    expect([at("vllm:num_requests_running"), at("vllm:num_requests_waiting"), at("vllm:kv_cache_usage_perc")]).toEqual([
      2, 1, 0.2,
    ]);
    const [a, b, c] = reqs as [(typeof reqs)[0], (typeof reqs)[0], (typeof reqs)[0]];
    a.token();
    a.token();
    b.token();
    expect([
      at("vllm:generation_tokens_total"),
      at("vllm:prompt_tokens_total"),
      at("vllm:kv_cache_usage_perc"),
    ]).toEqual([3, 20, 0.23]);
    a.end("length");
    await c.admitted;
    expect([at("vllm:num_requests_running"), at("vllm:num_requests_waiting")]).toEqual([2, 0]);
    b.end("stop");
    c.token();
    c.end("stop");
    expect([
      at("vllm:request_success_total"),
      at("vllm:time_to_first_token_seconds_count"),
      at("vllm:e2e_request_latency_seconds_count"),
    ]).toEqual([3, 3, 3]);
    expect(at("vllm:inter_token_latency_seconds_count")).toBe(1);
    expect(x.text()).toContain('vllm:request_success_total{model_name="m",engine="0",finished_reason="length"} 1.0');
  });

  it("admits no request whose prompt the KV cache cannot hold while others run", () => {
    const x = createExporter({ engine: "sglang", served: ["m"] }, { maxRunning: 8, kvTokens: 100 });
    x.begin(60, true);
    x.begin(60, true);
    expect([
      sum(x.text(), "sglang:num_running_reqs"),
      sum(x.text(), "sglang:num_queue_reqs"),
      sum(x.text(), "sglang:token_usage"),
    ]).toEqual([1, 1, 0.6]);
  });
});

describe("dashboards/sm121.json", () => {
  it("is the render of the drivers' series (npm run dashboard writes it)", () => {
    expect(readFileSync(join(__dirname, "..", "dashboards", "sm121.json"), "utf8")).toBe(dashboardJson());
  });

  it("asks only for series the drivers name, per deployment", () => {
    const named = new Set(
      Object.values(DRIVERS).flatMap((d): string[] => {
        const series = d.metrics?.series;
        return series === undefined ? [] : (Object.keys(series) as Array<keyof MetricSeries>).map((k) => series[k]);
      }),
    );
    for (const p of dashboardPanels()) {
      for (const q of p.queries) {
        const used = [...q.expr.matchAll(/([a-z]+:[a-z_]+?)(?:_bucket)?[{[)]/g)].map((m) => m[1] ?? "");
        for (const u of used) expect(named.has(u), `${p.title}: ${u}`).toBe(true);
        expect(q.expr, p.title).toMatch(/deployment/);
      }
    }
  });
});
