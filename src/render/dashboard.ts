/**
 * dashboards/sm121.json: a Grafana dashboard of the engines sm121 serves, per deployment (the
 * `deployment` label the scrape targets carry): requests running and queued, KV cache use,
 * tokens per second, finished requests, time to first token, inter-token and end-to-end latency,
 * and whether each target is up. Every query is PromQL over the series the drivers name (one
 * `or` arm per distinct engine exporter), so a new engine's driver is on it when it exports.
 * `npm run dashboard` writes the file; a test checks that it is this render.
 */
import { DRIVERS } from "../engines";
import type { MetricSeries } from "../engines/driver";

interface Query {
  expr: string;
  legend: string;
}

interface Panel {
  title: string;
  unit: string;
  description: string;
  queries: Query[];
}

/** The distinct exporters of the registered drivers (gr8 serves vLLM's). */
function exporters(): MetricSeries[] {
  const seen = new Map<string, MetricSeries>();
  for (const d of Object.values(DRIVERS))
    if (d.metrics !== undefined) seen.set(JSON.stringify(d.metrics.series), d.metrics.series);
  return [...seen.values()];
}

/** `f(series)` for every exporter, joined with `or`: a deployment runs one engine. */
const either = (f: (s: MetricSeries) => string): string => exporters().map(f).join(" or ");

const quantile = (q: number, pick: (s: MetricSeries) => string): string =>
  either((s) => `histogram_quantile(${q}, sum by (deployment, le) (rate(${pick(s)}_bucket[5m])))`);

export function dashboardPanels(): Panel[] {
  const by = "{{deployment}}";
  return [
    {
      title: "Requests running",
      unit: "short",
      description: "Requests in the engine's running batch.",
      queries: [{ expr: either((s) => `sum by (deployment) (${s.running})`), legend: by }],
    },
    {
      title: "Requests waiting",
      unit: "short",
      description: "Requests queued for a slot or KV cache.",
      queries: [{ expr: either((s) => `sum by (deployment) (${s.waiting})`), legend: by }],
    },
    {
      title: "KV cache use",
      unit: "percentunit",
      description: "The used share of the KV cache.",
      queries: [{ expr: either((s) => `max by (deployment) (${s.kvUsage})`), legend: by }],
    },
    {
      title: "Tokens per second",
      unit: "short",
      description: "Generated and prompt tokens per second, over 1 minute.",
      queries: [
        { expr: either((s) => `sum by (deployment) (rate(${s.generationTokens}[1m]))`), legend: `${by} generated` },
        { expr: either((s) => `sum by (deployment) (rate(${s.promptTokens}[1m]))`), legend: `${by} prompt` },
      ],
    },
    {
      title: "Requests finished per second",
      unit: "reqps",
      description: "Over 1 minute.",
      queries: [{ expr: either((s) => `sum by (deployment) (rate(${s.requests}[1m]))`), legend: by }],
    },
    {
      title: "Time to first token",
      unit: "s",
      description: "p50 and p95 over 5 minutes.",
      queries: [
        { expr: quantile(0.5, (s) => s.ttft), legend: `${by} p50` },
        { expr: quantile(0.95, (s) => s.ttft), legend: `${by} p95` },
      ],
    },
    {
      title: "Inter-token latency",
      unit: "s",
      description: "p50 and p95 over 5 minutes.",
      queries: [
        { expr: quantile(0.5, (s) => s.itl), legend: `${by} p50` },
        { expr: quantile(0.95, (s) => s.itl), legend: `${by} p95` },
      ],
    },
    {
      title: "End-to-end request latency",
      unit: "s",
      description: "p50 and p95 over 5 minutes.",
      queries: [
        { expr: quantile(0.5, (s) => s.e2e), legend: `${by} p50` },
        { expr: quantile(0.95, (s) => s.e2e), legend: `${by} p95` },
      ],
    },
    {
      title: "Targets up",
      unit: "short",
      description: "1 when Prometheus' last scrape of the engine's /metrics answered.",
      queries: [{ expr: 'up{deployment!=""}', legend: "{{deployment}} {{node}} rank {{rank}}" }],
    },
  ];
}

/** The dashboard's JSON text, as Grafana imports it (the Prometheus data source is asked for). */
export function dashboardJson(): string {
  const ds = { type: "prometheus", uid: "${DS_PROMETHEUS}" };
  const panels = dashboardPanels().map((p, i) => ({
    id: i + 1,
    type: "timeseries",
    title: p.title,
    description: p.description,
    datasource: ds,
    gridPos: { h: 8, w: 12, x: (i % 2) * 12, y: Math.floor(i / 2) * 8 },
    fieldConfig: { defaults: { unit: p.unit }, overrides: [] },
    options: {
      legend: { displayMode: "list", placement: "bottom", showLegend: true },
      tooltip: { mode: "multi", sort: "none" },
    },
    targets: p.queries.map((q, j) => ({
      refId: String.fromCharCode(65 + j),
      datasource: ds,
      expr: q.expr,
      legendFormat: q.legend,
    })),
  }));
  const dashboard = {
    __inputs: [
      {
        name: "DS_PROMETHEUS",
        label: "Prometheus",
        description: "The Prometheus that reads sm121's scrape targets",
        type: "datasource",
        pluginId: "prometheus",
        pluginName: "Prometheus",
      },
    ],
    title: "sm121 engines",
    uid: "sm121-engines",
    description:
      "The engines sm121 serves, per deployment, from their own /metrics. No restarts panel yet: " +
      "sm121's state counts no restarts (docs/metrics.md).",
    tags: ["sm121"],
    editable: true,
    schemaVersion: 39,
    version: 1,
    refresh: "10s",
    time: { from: "now-1h", to: "now" },
    templating: { list: [] },
    annotations: { list: [] },
    panels,
  };
  return `${JSON.stringify(dashboard, null, 2)}\n`;
}
