/**
 * `sm121 bench <deployment> | --url URL[,URL...] [--concurrency C] [--requests N] [--prompt-tokens P]
 * [--max-tokens M] [--model NAME] [--node N] [--yes] [--json]`: a streaming chat load run from this
 * machine against the deployment's endpoint(s) (round robin) or any OpenAI endpoint.
 *
 * The API key: $SM121_API_KEY, else (--url) $OPENAI_API_KEY, else (a deployment whose endpoint
 * answers 401) the key kept on the node, read over ssh from the files status reads it from. A
 * protected node's endpoint needs --yes: a benchmark is load on a server that carries live traffic.
 */
import { withHosts } from "../remote";
import type { Site } from "../recipe/types";
import type { NodeBundle } from "../render/types";
import { readApiKeyLines } from "../render/apikey";
import { UsageError, bool, num, str, type Parsed } from "./args";
import { getModels, runLoad, type LoadResult } from "../serve/loadclient";
import { summarize } from "../serve/loadstats";
import { cliAuth, hostOf, selectedDeployment, selectedNode } from "./connect";
import { contextProject, type CliContext } from "./context";
import { t } from "../text/messages";
import { Progress } from "./progress";
import { benchSchema, jsonOut, type BenchReport, type Latency } from "./schemas";
import { keyFiles } from "../serve/readiness";
import { firstRecord, printRecord } from "../protocol";

function count(p: Parsed, flag: string, fallback: number): number {
  const v = num(p, flag, fallback);
  if (!Number.isInteger(v) || v < 1) throw new UsageError(t("bench.badCount", { flag: `--${flag}`, value: String(v) }));
  return v;
}

async function keyFromNodes(
  site: Site,
  p: Parsed,
  nodes: NodeBundle[],
  stack: CliContext["pulumi"],
): Promise<string | undefined> {
  const { auth } = cliAuth(site, p, process.env, stack);
  const keys = await withHosts(nodes, auth, (hosts) =>
    Promise.all(
      nodes.map(async (nb) => {
        const keyRecord = printRecord("benchKey", '"key64":"%s"', `"$(printf '%s' "$key" | base64 -w0)"`);
        const script = `${readApiKeyLines(keyFiles(nb))}\n${keyRecord}`;
        const res = await hostOf(hosts, nb).run(script, { step: "api key", allowFailure: true, timeoutMs: 30_000 });
        const k = Buffer.from(firstRecord(res.records, "benchKey")?.key64 ?? "", "base64").toString("utf8");
        return k === "" ? undefined : k;
      }),
    ),
  );
  return keys.find((k) => k !== undefined);
}

interface Target {
  deployment: string | null;
  urls: string[];
  model?: string;
  apiKey?: string;
  /** Where the key is kept when the endpoint asks for one (a deployment). */
  keyFrom?: () => Promise<string | undefined>;
}

function resolveTarget(ctx: CliContext, p: Parsed): Target | number {
  const envKey = process.env["SM121_API_KEY"] || undefined;
  const model = str(p, "model");
  const url = str(p, "url");
  if (url !== undefined) {
    if (p.positional.length > 0) throw new UsageError(t("bench.urlOrDeployment"));
    // Several replicas of one model: --url URL1,URL2 (requests go round robin).
    const urls = url
      .split(",")
      .map((u) => u.trim())
      .filter((u) => u !== "");
    for (const u of urls) if (!/^https?:\/\/[^/\s]+/.test(u)) throw new UsageError(t("bench.badUrl", { url: u }));
    if (urls.length === 0) throw new UsageError(t("bench.badUrl", { url }));
    const key = envKey ?? (process.env["OPENAI_API_KEY"] || undefined);
    return { deployment: null, urls, ...(model !== undefined && { model }), ...(key !== undefined && { apiKey: key }) };
  }
  const project = contextProject(ctx);
  const b = selectedDeployment(project.bundles, p.positional[0], ctx.stack, true);
  const only = selectedNode(project.site, p);
  const nodes = b.nodes.filter((nb) => nb.api !== undefined && (only === undefined || nb.node === only));
  if (nodes.length === 0) {
    ctx.err(t("bench.noEndpoint", { deployment: b.deployment, node: only ?? "*" }));
    return 2;
  }
  // A node that binds loopback answers only on itself; from here that address is this machine.
  const inward = nodes.filter(
    (nb) => nb.conn.kind === "ssh" && ["127.0.0.1", "localhost", "::1"].includes(nb.api?.host ?? ""),
  );
  if (inward.length > 0) {
    ctx.err(t("bench.loopback", { nodes: inward.map((nb) => nb.node).join(", "), url: inward[0]?.api?.url ?? "" }));
    return 2;
  }
  const guarded = nodes.filter((nb) => nb.protected).map((nb) => nb.node);
  if (guarded.length > 0 && !bool(p, "yes")) {
    ctx.err(t("bench.protected", { nodes: guarded.join(", "), deployment: b.deployment }));
    return 2;
  }
  const served = model ?? b.readiness.servedName;
  return {
    deployment: b.deployment,
    urls: nodes.map((nb) => nb.api?.url ?? ""),
    ...(served !== undefined && { model: served }),
    ...(envKey !== undefined && { apiKey: envKey }),
    keyFrom: () => keyFromNodes(project.site, p, nodes, ctx.pulumi),
  };
}

function report(
  target: Target & { model: string },
  cfg: { concurrency: number; requests: number; promptTokens: number; maxTokens: number },
  r: LoadResult,
): BenchReport {
  const s = r.durationMs / 1000;
  const rate = (n: number) => (s > 0 ? Math.round((n / s) * 100) / 100 : 0);
  return {
    deployment: target.deployment,
    urls: target.urls,
    model: target.model,
    ...cfg,
    completed: r.completed,
    errors: r.errors,
    retried: r.retried,
    errorSamples: r.errorSamples,
    durationS: Math.round(s * 1000) / 1000,
    requestsPerS: rate(r.completed),
    outputTokens: r.outputTokens,
    outputTokensPerS: rate(r.outputTokens),
    ttftMs: summarize(r.ttft),
    itlMs: summarize(r.itl),
    e2eMs: summarize(r.e2e),
    clientCpuPercent: r.durationMs > 0 ? Math.round((r.cpuMs / r.durationMs) * 1000) / 10 : 0,
  };
}

function text(b: BenchReport): string[] {
  const f = (v: number) => v.toFixed(2).padStart(9);
  const row = (label: string, l: Latency) =>
    `  ${label.padEnd(6)}${[l.p50, l.p90, l.p99, l.mean, l.max].map(f).join("")}`;
  const lines = [
    t("bench.header", {
      model: b.model,
      urls: b.urls.join(", "),
      requests: b.requests,
      concurrency: b.concurrency,
      prompt: b.promptTokens,
      max: b.maxTokens,
    }),
    `  ${t("bench.requestsLine", {
      ok: b.completed,
      errors: b.errors,
      retried: b.retried,
      seconds: b.durationS,
      rate: b.requestsPerS,
    })}`,
    `  ${t("bench.tokensLine", { tokens: b.outputTokens, rate: b.outputTokensPerS })}`,
    `  ${"ms".padEnd(6)}${["p50", "p90", "p99", "mean", "max"].map((h) => h.padStart(9)).join("")}`,
    row("TTFT", b.ttftMs),
    row("ITL", b.itlMs),
    row("E2E", b.e2eMs),
    `  ${t("bench.clientCpu", { percent: b.clientCpuPercent })}`,
  ];
  for (const e of b.errorSamples) lines.push(`  ${t("common.error")}: ${e}`);
  if (b.clientCpuPercent >= 90 && b.durationS >= 1) lines.push(`  ${t("bench.clientBound")}`);
  return lines;
}

export async function benchCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const cfg = {
    concurrency: count(p, "concurrency", 8),
    requests: count(p, "requests", 100),
    promptTokens: count(p, "prompt-tokens", 128),
    maxTokens: count(p, "max-tokens", 128),
  };
  const rate = str(p, "rate") === undefined ? undefined : count(p, "rate", 1);
  const target = resolveTarget(ctx, p);
  if (typeof target === "number") return target;
  let first = await getModels(target.urls[0] ?? "", target.apiKey);
  // No ssh unless the endpoint wants a key: then it is read where the engine reads it.
  if (first.code === 401 && target.apiKey === undefined && target.keyFrom !== undefined) {
    const key = await target.keyFrom();
    if (key !== undefined) {
      target.apiKey = key;
      first = await getModels(target.urls[0] ?? "", key);
    }
  }
  if (first.code !== 200) {
    ctx.err(t("bench.unreachable", { url: target.urls[0] ?? "", error: first.error ?? "" }));
    return 1;
  }
  const model = target.model ?? first.ids[0];
  if (model === undefined) {
    ctx.err(t("bench.noModel", { url: target.urls[0] ?? "" }));
    return 1;
  }
  const json = bool(p, "json");
  const progress = new Progress(cfg.requests, process.stdout, process.stdout.isTTY === true && !json);
  let stop = false;
  const onInt = () => (stop = true);
  process.once("SIGINT", onInt);
  try {
    const r = await runLoad({
      urls: target.urls,
      model,
      ...(target.apiKey !== undefined && { apiKey: target.apiKey }),
      ...cfg,
      ...(rate !== undefined && { ratePerS: rate }),
      timeoutMs: 300_000,
      onProgress: (d, e) => progress.update(d, e, d + e === cfg.requests),
      stopped: () => stop,
    });
    progress.finish();
    const rep = report({ ...target, model }, cfg, r);
    if (json) ctx.out(jsonOut(benchSchema(), rep));
    else for (const l of text(rep)) ctx.out(l);
    return rep.errors === 0 && rep.completed > 0 ? 0 : 1;
  } finally {
    process.removeListener("SIGINT", onInt);
  }
}
