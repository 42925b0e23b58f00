// A real Prometheus for the tests: Debian's package (scripts/setup.sh installs it), on a free
// loopback port, with its own storage directory under `dir` and a short scrape interval,
// reading the file_sd files sm121 writes with the same lines docs/metrics.md shows an operator.
// Stopped by its pid (with its start time, as the site's processes are).
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { isAlive, procStat, terminate, type ProcRecord } from "./procs";
import { needsRealParts } from "./lane";

export interface PromTarget {
  labels: Record<string, string>;
  health: "up" | "down" | "unknown";
  lastError: string;
  scrapeUrl: string;
}

export interface PromSample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface Prometheus {
  url: string;
  pid: number;
  /** GET /api/v1/query: the instant vector or scalar of `expr` now. */
  query(expr: string): Promise<PromSample[]>;
  /** GET /api/v1/targets: the active targets with their labels after relabelling. */
  targets(): Promise<PromTarget[]>;
  stop(): Promise<void>;
}

export interface PrometheusOptions {
  /** Its own directory: prometheus.yml, the storage (data/) and its log. */
  dir: string;
  /** Its port on 127.0.0.1 (a test file's own, ./alloc.ts). */
  port: number;
  /** The file_sd files to read. */
  files: string[];
  /** Seconds between scrapes (default 1). */
  scrapeIntervalS?: number;
}

/** Resolves once `cond` holds (asked every 250 ms); rejects after `timeoutMs` naming `what` and the last answer. */
export async function eventually<T>(
  what: string,
  ask: () => Promise<T>,
  cond: (v: T) => boolean,
  timeoutMs = 60_000,
): Promise<T> {
  let last: T | undefined;
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 250))) {
    last = await ask();
    if (cond(last)) return last;
  }
  throw new Error(`${what} did not happen within ${timeoutMs / 1000} s; last: ${JSON.stringify(last)}`);
}

/** prometheus.yml: the three file_sd lines of docs/metrics.md under a job, at a short interval. */
export function prometheusYml(files: string[], intervalS: number): string {
  return [
    "global:",
    `  scrape_interval: ${intervalS}s`,
    `  scrape_timeout: ${intervalS}s`,
    `  evaluation_interval: ${intervalS}s`,
    "scrape_configs:",
    "  - job_name: sm121",
    "    file_sd_configs:",
    `      - files: [${files.map((f) => JSON.stringify(f)).join(", ")}]`,
    "",
  ].join("\n");
}

async function getJson(url: string): Promise<{ status: string; data: unknown; error?: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const body = (await res.json()) as { status: string; data: unknown; error?: string };
  if (body.status !== "success") throw new Error(`prometheus: ${url}: ${body.error ?? res.status}`);
  return body;
}

export async function startPrometheus(o: PrometheusOptions): Promise<Prometheus> {
  needsRealParts("Prometheus");
  const bin = spawnSync("sh", ["-c", "command -v prometheus"], { encoding: "utf8" }).stdout.trim();
  if (bin === "")
    throw new Error("test site: prometheus is not installed (Debian's package; scripts/setup.sh installs it)");
  fs.mkdirSync(path.join(o.dir, "data"), { recursive: true });
  const config = path.join(o.dir, "prometheus.yml");
  fs.writeFileSync(config, prometheusYml(o.files, o.scrapeIntervalS ?? 1));
  const port = o.port;
  const log = fs.openSync(path.join(o.dir, "prometheus.log"), "a");
  const child = spawn(
    bin,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(o.dir, "data")}`,
      `--web.listen-address=127.0.0.1:${port}`,
      "--log.level=warn",
    ],
    { stdio: ["ignore", log, log] },
  );
  fs.closeSync(log);
  const pid = child.pid ?? 0;
  const rec: ProcRecord = { pid, start: procStat(pid)?.start ?? null, what: "prometheus" };
  const url = `http://127.0.0.1:${port}`;
  const stop = () => terminate([rec], 10_000);
  // Ready once the TSDB is open and the web API answers.
  for (const end = Date.now() + 60_000; ; await new Promise((r) => setTimeout(r, 100))) {
    if (!isAlive(pid, rec.start))
      throw new Error(
        `test site: prometheus exited:\n${fs.readFileSync(path.join(o.dir, "prometheus.log"), "utf8").slice(-2000)}`,
      );
    const ready = await fetch(`${url}/-/ready`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (Date.now() > end) {
      await stop();
      throw new Error("test site: prometheus was not ready within 60 s");
    }
  }
  return {
    url,
    pid,
    async query(expr) {
      const body = await getJson(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const data = body.data as { resultType: string; result: unknown };
      if (data.resultType === "scalar") return [{ metric: {}, value: data.result as [number, string] }];
      return data.result as PromSample[];
    },
    async targets() {
      const body = await getJson(`${url}/api/v1/targets?state=active`);
      return (body.data as { activeTargets: PromTarget[] }).activeTargets;
    },
    stop,
  };
}
