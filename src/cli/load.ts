/**
 * The load part of `sm121 status`: per deployment and node that serves the engine's metrics,
 * requests running and waiting, the KV cache's use, and prompt and generated tokens per second
 * over an interval. Two reads of the engine's own /metrics (the series its driver names), made by
 * curl on the node so that an engine bound to the node's loopback answers too, `intervalS` apart
 * by the node's clock.
 */
import { driverFor } from "../engines";
import type { MetricSeries } from "../engines/driver";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { quote } from "../text/shell";
import type { Reached } from "./connect";
import { t } from "../text/messages";
import type { Load, StatusReport } from "./schemas";
import { table, TABLE_COLUMNS } from "./table";
import { printRecord, recordsOf, type NodeRecord } from "../protocol";
import { parseExposition, seriesSum, type Exposition } from "../engines/exposition";

export interface LoadOptions {
  yes: boolean;
  noHttp: boolean;
  intervalS: number;
}

/** The script that reads `url` twice, keeping the lines that name one of the `series` (read: engines/exposition). */
export function loadScript(url: string, series: MetricSeries, intervalS: number): string {
  const names = [series.running, series.waiting, series.kvUsage, series.promptTokens, series.generationTokens];
  return [
    "body=$(mktemp); trap 'rm -f \"$body\"' EXIT",
    "sample() {",
    "  at=${EPOCHREALTIME:-$(date +%s.%N)}",
    `  code=$(curl -s -o "$body" -w '%{http_code}' --max-time 5 ${quote(url)} 2>/dev/null || true)`,
    `  lines=$(grep -F ${names.map((n) => `-e ${quote(n)}`).join(" ")} "$body" | base64 -w0 || true)`,
    `  ${printRecord("load", '"at":"%s","http":"%s","lines":"%s"', '"$at" "$code" "$lines"')}`,
    "}",
    `sample; sleep ${intervalS}; sample`,
  ].join("\n");
}

/**
 * The load from the script's two samples, `load` records: when (the node's clock), curl's HTTP
 * code, the series' lines (base64).
 */
export function loadOf(records: readonly NodeRecord[], series: MetricSeries): Load {
  const samples = recordsOf(records, "load");
  const [a, b] = samples;
  if (a === undefined || b === undefined) {
    return { measured: false, reason: "failed", detail: t("status.noSample") };
  }
  for (const s of [a, b]) {
    if (s.http === "200") continue;
    const detail = s.http === "000" || s.http === "" ? t("status.noAnswer") : `HTTP ${s.http}`;
    return { measured: false, reason: "failed", detail };
  }
  const [first, last] = [a, b].map((s) => parseExposition(Buffer.from(s.lines, "base64").toString("utf8")));
  // Bash prints EPOCHREALTIME with the locale's decimal separator.
  const at = (s: { at: string }) => Number(s.at.replace(",", "."));
  const intervalS = Math.max(0.001, at(b) - at(a));
  // A series the engine has not made yet (SGLang makes them at the first request) is zero; one
  // whose value is no finite number (NaN, an infinite counter) is unknown.
  const read = (e: Exposition | undefined, name: string, absent: number | null): number | null => {
    const v = e === undefined ? "unknown" : seriesSum(e, name);
    return v === "unknown" ? null : v === "absent" ? absent : v;
  };
  const rate = (name: string) => {
    const [x, y] = [read(first, name, 0), read(last, name, 0)];
    if (x === null || y === null || y < x) return null;
    return Math.round(((y - x) / intervalS) * 10) / 10;
  };
  return {
    measured: true,
    running: read(last, series.running, 0),
    waiting: read(last, series.waiting, 0),
    kvCacheUsage: read(last, series.kvUsage, null),
    promptTokensPerS: rate(series.promptTokens),
    generationTokensPerS: rate(series.generationTokens),
    intervalS: Math.round(intervalS * 100) / 100,
  };
}

/** One node's load: measured when its engine exports metrics there and a request is allowed. */
export async function entryLoad(
  r: Reached | undefined,
  b: DeploymentBundle,
  nb: NodeBundle,
  o: LoadOptions,
): Promise<Load> {
  const metrics = driverFor(b.engine).metrics;
  if (metrics === undefined) return { measured: false, reason: "no-metrics", detail: null };
  if (nb.api === undefined) return { measured: false, reason: "no-api", detail: null };
  if (o.noHttp) return { measured: false, reason: "no-http", detail: null };
  if (nb.protected && !o.yes) return { measured: false, reason: "protected", detail: null };
  if (r === undefined || !r.ok) return { measured: false, reason: "unreachable", detail: null };
  const res = await r.host.run(loadScript(`${nb.api.url}${metrics.path}`, metrics.series, o.intervalS), {
    step: "load",
    allowFailure: true,
    timeoutMs: 30_000 + o.intervalS * 1000,
  });
  return loadOf(res.records, metrics.series);
}

const pct = (v: number | null) => (v === null ? "-" : `${(v * 100).toFixed(1)}%`);
const perS = (v: number | null) => (v === null ? "-" : v.toFixed(1));

function reasonText(l: Extract<Load, { measured: false }>): string {
  if (l.reason === "no-metrics") return t("status.loadNoMetrics");
  if (l.reason === "protected") return t("status.healthProtected");
  if (l.reason === "no-http") return t("status.healthNoHttp");
  if (l.reason === "unreachable") return t("status.unreachable");
  return t("status.loadFailed", { detail: l.detail ?? "-" });
}

/** The load table: a row for each node that answers a deployment's API, within `max` columns. */
export function loadText(r: StatusReport, max: number = TABLE_COLUMNS): string[] {
  const entries = r.deployments.flatMap((d) =>
    d.nodes.filter((e) => e.load.measured || e.load.reason !== "no-api").map((e) => ({ d, e })),
  );
  if (entries.length === 0) return [];
  const interval = entries
    .map(({ e }) => (e.load.measured ? e.load.intervalS : undefined))
    .find((x) => x !== undefined);
  const rows = entries.map(({ d, e }) => {
    const l = e.load;
    if (!l.measured) return [d.deployment, e.node, "-", "-", "-", "-", "-"];
    return [
      d.deployment,
      e.node,
      l.running === null ? "-" : String(l.running),
      l.waiting === null ? "-" : String(l.waiting),
      pct(l.kvCacheUsage),
      perS(l.promptTokensPerS),
      perS(l.generationTokensPerS),
    ];
  });
  const head = [
    t("status.colDeployment"),
    t("status.colNode"),
    t("status.colRunning"),
    t("status.colWaiting"),
    t("status.colKvUse"),
    t("status.colPromptTps"),
    t("status.colGenTps"),
  ];
  // Why a row has no numbers, under the table: a reason is longer than a column of numbers.
  const why = entries.flatMap(({ d, e }) =>
    e.load.measured ? [] : [`  ${d.deployment} ${e.node}: ${reasonText(e.load)}`],
  );
  const title = interval === undefined ? t("status.loadTitle") : t("status.loadOver", { s: interval });
  return [title, ...table(head, rows, "  ", max), ...why];
}
