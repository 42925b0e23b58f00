/**
 * `sm121 status [--stack S] [--node N] [--json] [--no-http] [--gpu-probe] [--yes]`: per node of
 * every deployment, the container or session state (the target's status script), drift against
 * the current render (state.json and the files' sha256, as refresh sees it), health (/v1/models,
 * the API key read on the node), liveness (one 1-token completion: an engine that answers
 * /v1/models and gives no token is "hung", apart from one that does not run: "down"), the KV
 * cache line (from the log, else the copy saved at up),
 * MemAvailable, vm.watermark_scale_factor and nvidia-smi's compute apps (for information only).
 *
 * Protected nodes (seed 001), also when --node is not given: no HTTP request and no GPU probe
 * without --yes. Status still shows the container, the .env, the KV cache line and memory.
 *
 * Exit 0 when every node answered, nothing drifted and every health check that was made passed.
 */
import type { DeploymentBundle, NodeBundle } from "../render/types";
import type { Site, SiteNode } from "../recipe/types";
import { nodeConn } from "../render/node";
import { parseEnvFile } from "../render/envfile";
import { envPathOf, parseProbe, type NodeState } from "../serve/probe";
import { driftFindings } from "../serve/drift";
import { probeLiveness } from "../serve/liveness";
import { lifeStatusLines } from "../serve/lifeplan";
import { bool, type Parsed } from "./args";
import type { RunResult } from "../remote";
import { cliAuth, selectedNode, withNodes, type Reached } from "./connect";
import { contextProject, type CliContext } from "./context";
import { t } from "../text/messages";
import { curlResult, nodeCurlScript } from "./smoke";
import { factsScript, gpuProbeScript, probeScript } from "./statusscripts";
import { jsonOut, statusSchema, type Health, type StatusEntry, type StatusNode, type StatusReport } from "./schemas";
import { statusText } from "./table";
import { entryLoad, loadText } from "./load";
import { loadOptions, watchLoad } from "./watch";
import { readModels } from "../serve/readiness";
import { parseReady } from "../serve/phases";
import { firstRecord } from "../protocol";

const b64 = (s: unknown) => Buffer.from(typeof s === "string" ? s : "", "base64").toString("utf8");

/** The first finding of the one drift rule (serve/drift.ts), as status reports it. */
function driftOf(nb: NodeBundle, st: NodeState): StatusEntry["drift"] {
  const d = driftFindings(nb, st)[0];
  if (d === undefined) return null;
  return { kind: d.kind === "removed" ? "edited" : d.kind, files: d.files };
}

function targetOf(b: DeploymentBundle, nb: NodeBundle, site: Site): StatusEntry["target"] {
  if (b.deploy === "docker" || b.deploy === "tmux") return { kind: b.deploy, name: `sm121-${b.deployment}-${nb.rank}` };
  if (b.deploy === "script") {
    const env = envPathOf(nb);
    const r = Object.values(site.nodes[nb.node]?.recipes ?? {}).find(
      (x) => `${x.dir.replace(/\/+$/, "")}/.env` === env,
    );
    return { kind: "script", name: r?.container ?? null };
  }
  return { kind: b.deploy, name: null };
}

interface EntryOptions {
  /** sm121:liveness timeout: what a serving engine gets for one token. */
  livenessS: number;
  yes: boolean;
  noHttp: boolean;
  site: Site;
  /** --verbose: the raw @sm121 records of each node script (seed 001). */
  trace: (node: string, step: string, res: RunResult) => void;
}

/** The records of a node script as the node printed them, one `node step | @sm121 {...}` line each. */
export function recordLines(node: string, step: string, res: RunResult): string[] {
  return res.stdout
    .split("\n")
    .filter((l) => l.startsWith("@sm121 "))
    .map((l) => `${node} ${step} | ${l}`);
}

/**
 * The health of one engine from its /v1/models answer, read with the one schema (serve/readiness
 * readModels): a 200 whose body is no model list is not healthy (the row says so), and never ends
 * the status of the other engines.
 */
export function healthOf(code: number, latencyMs: number, body: string): Health {
  const models = readModels(body);
  const data = models?.data ?? [];
  return {
    checked: true,
    ok: code === 200 && models !== undefined,
    httpCode: code,
    latencyMs,
    models: data.map((m) => m.id),
    maxModelLen: data[0]?.max_model_len ?? null,
  };
}

type Entry = Omit<StatusEntry, "load">;

async function statusEntry(
  r: Reached | undefined,
  b: DeploymentBundle,
  nb: NodeBundle,
  o: EntryOptions,
  generating: boolean,
): Promise<Entry> {
  const base = {
    deployment: b.deployment,
    node: nb.node,
    rank: nb.rank,
    protected: nb.protected,
    target: targetOf(b, nb, o.site),
    runs: nb.runs,
  };
  if (r === undefined || !r.ok) {
    const health: Health = { checked: false, reason: "unreachable" };
    const error = r?.error.message ?? null;
    return {
      ...base,
      running: null,
      startedAt: null,
      drift: null,
      env: null,
      health,
      live: null,
      kvCache: null,
      ready: null,
      between: [],
      error,
    };
  }
  const httpAllowed = (!nb.protected || o.yes) && !o.noHttp;
  const res = await r.host.run(probeScript(b, nb, httpAllowed), {
    step: "status",
    allowFailure: true,
    timeoutMs: 60_000,
  });
  o.trace(nb.node, "status", res);
  const st = parseProbe(res.records);
  const running: boolean | null = firstRecord(res.records, "status") === undefined ? null : st.running;
  // After `pulumi destroy` or `sm121 down` the node holds no record and runs nothing: not deployed,
  // which is no drift, and nothing it kept from before (the KV cache line saved at up) is shown.
  if (running === false && st.recorded === undefined) {
    const health = { checked: false as const, reason: "not-deployed" as const };
    return {
      ...base,
      running,
      startedAt: null,
      drift: null,
      env: null,
      health,
      live: null,
      kvCache: null,
      ready: null,
      between: [],
      error: null,
    };
  }
  const startedAt = st.startedAt ?? null;
  let env: StatusEntry["env"] = null;
  if (st.envText !== undefined) {
    const parsed = parseEnvFile(st.envText);
    const h = (k: string) => parsed.header[k] ?? null;
    env = {
      path: envPathOf(nb) ?? "",
      profile: h("profile"),
      rendered: h("rendered"),
      sha256: h("sha256"),
      edited: parsed.edited,
    };
  }
  let kvCache: StatusEntry["kvCache"] = null;
  const kvRec = firstRecord(res.records, "kvLog");
  if (kvRec !== undefined) {
    const fromLog = b64(kvRec.log64).trim();
    const saved = b64(kvRec.saved64).trim();
    const line = fromLog !== "" ? fromLog : saved;
    const tokens = line === "" ? null : (new RegExp(b.readiness.kvCachePattern ?? "$^").exec(line)?.[1] ?? null);
    // vLLM's line names where the cache lives: `GPU KV cache size`, or `CPU KV cache size` (its CPU build).
    const device = /\b([CG]PU) KV cache size\b/.exec(line)?.[1];
    const on = device === "CPU" || device === "GPU" ? device : null;
    if (line !== "") kvCache = { line, tokens, device: on, source: fromLog !== "" ? "log" : "saved" };
  }
  let health: Health;
  if (nb.api === undefined) health = { checked: false, reason: "no-api" };
  else if (o.noHttp) health = { checked: false, reason: "no-http" };
  else if (!httpAllowed) health = { checked: false, reason: "protected" };
  else {
    const h = await r.host.run(nodeCurlScript(nb, { method: "GET", url: `${nb.api.url}/v1/models`, timeoutS: 5 }), {
      step: "health",
      allowFailure: true,
      timeoutMs: 30_000,
    });
    o.trace(nb.node, "health", h);
    const c = curlResult(h.records);
    health =
      c === undefined
        ? { checked: true, ok: false, httpCode: 0, latencyMs: 0, models: [], maxModelLen: null }
        : healthOf(c.code, c.totalMs, c.body);
  }
  // An engine that answers /v1/models may still produce no token: hung, which is not down.
  let live: StatusEntry["live"] = null;
  // An engine the load saw generate tokens is live: no token of status's own on top of its work.
  if (health.checked && health.ok && nb.runs && generating) live = { verdict: "busy", timeoutS: o.livenessS, ms: null };
  else if (health.checked && health.ok && nb.runs) {
    const l = await probeLiveness(r.host, nb, o.livenessS).catch(() => undefined);
    if (l !== undefined) live = { verdict: l.verdict, timeoutS: l.timeoutS, ms: l.ms ?? null };
    // The same drift rule as the plan's: a hung engine is drift.
    if (l !== undefined) st.live = l;
  }
  const error =
    res.code === 0 ? null : t("status.scriptFailed", { code: String(res.code), stderr: res.stderr.trim().slice(-300) });
  // Without the status script (a protected node's API) "not running" is unknown, not drift.
  const drift = driftOf(nb, running === null ? { ...st, running: true } : st);
  const lastReady = firstRecord(res.records, "lastReady");
  const ready = (lastReady === undefined ? undefined : parseReady(lastReady.json64)) ?? null;
  const between = lifeStatusLines(nb, st);
  return { ...base, running, startedAt, drift, env, health, live, kvCache, ready, between, error };
}

function parseApps(text: string): StatusNode["gpuApps"] {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => {
      const [pid = "", name = "", mem = ""] = l.split(",").map((s) => s.trim());
      const used = Number(mem);
      return { pid: Number.parseInt(pid, 10) || 0, name, usedMiB: mem === "" || Number.isNaN(used) ? null : used };
    });
}

async function nodeFacts(
  r: Reached | undefined,
  sn: SiteNode,
  gateGiB: number,
  gpuProbe: boolean,
  trace: EntryOptions["trace"],
): Promise<StatusNode> {
  const base = { node: sn.name, protected: sn.protected, memGateGiB: gateGiB };
  if (r === undefined || !r.ok) {
    return {
      ...base,
      reachable: false,
      error: r?.error.message ?? null,
      memAvailableGiB: null,
      watermarkScaleFactor: null,
      gpuApps: null,
      gpuProbe: gpuProbe ? { ran: false, reason: "unreachable" } : null,
    };
  }
  const res = await r.host.run(factsScript(), { step: "node facts", allowFailure: true, timeoutMs: 60_000 });
  trace(sn.name, "facts", res);
  const f = firstRecord(res.records, "nodeMemory");
  const mem = typeof f?.memKiB === "number" ? Math.round((f.memKiB / 1048576) * 10) / 10 : null;
  const wsf = f !== undefined && f.wsf !== "" ? f.wsf : null;
  const apps = f?.appsRc === 0 ? parseApps(b64(f.apps64)) : null;
  let probe: StatusNode["gpuProbe"] = null;
  if (gpuProbe && sn.gpuProbe === undefined) probe = { ran: false, reason: "not-configured" };
  else if (gpuProbe && sn.gpuProbe !== undefined) {
    const started = Date.now();
    const pr = await r.host.run(gpuProbeScript(sn.gpuProbe), {
      step: "gpu probe",
      allowFailure: true,
      timeoutMs: 600_000,
    });
    const rec = firstRecord(pr.records, "probeOutput");
    const seconds = Math.round((Date.now() - started) / 100) / 10;
    probe = { ran: true, code: rec?.code ?? null, output: b64(rec?.out64), seconds };
  }
  return {
    ...base,
    reachable: true,
    error: null,
    memAvailableGiB: mem,
    watermarkScaleFactor: wsf,
    gpuApps: apps,
    gpuProbe: probe,
  };
}

/** Every node answered and none holds a deployment of the site (none declared, or all down). */
function nothingDeployed(r: StatusReport): boolean {
  const notDeployed = (e: StatusEntry) => !e.health.checked && e.health.reason === "not-deployed";
  return r.nodes.every((n) => n.reachable) && r.deployments.every((d) => d.nodes.every(notDeployed));
}

function isOk(e: StatusEntry): boolean {
  const healthy = (!e.health.checked || e.health.ok) && e.live?.verdict !== "hung";
  return e.error === null && e.drift === null && healthy;
}

export async function statusCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const project = contextProject(ctx);
  const site = project.site;
  const only = selectedNode(site, p);
  const verbose = bool(p, "verbose");
  const trace = (node: string, step: string, res: RunResult) => {
    if (verbose) for (const l of recordLines(node, step, res)) ctx.err(l);
  };
  const o: EntryOptions = {
    livenessS: site.liveness.timeoutS,
    yes: bool(p, "yes"),
    noHttp: bool(p, "no-http"),
    site,
    trace,
  };
  const gpu = bool(p, "gpu-probe");
  const scope = project.bundles
    .map((b) => ({ b, nodes: b.nodes.filter((nb) => only === undefined || nb.node === only) }))
    .filter((x) => x.nodes.length > 0);
  const names = only !== undefined ? [only] : [...new Set(scope.flatMap((x) => x.nodes.map((n) => n.node)))];
  const nodes = names.map((n) => site.nodes[n]).filter((n): n is SiteNode => n !== undefined);
  const guarded = nodes.filter((n) => n.protected).map((n) => n.name);
  if (gpu && !o.yes && guarded.length > 0) {
    ctx.err(t("status.gpuProbeProtected", { nodes: guarded.join(", ") }));
    return 2;
  }
  const gateOf = (n: SiteNode) =>
    scope.flatMap((x) => x.nodes).find((nb) => nb.node === n.name)?.memGateGiB ??
    n.minMemAvailableGiB ??
    site.minMemAvailableGiB;
  const { auth } = cliAuth(site, p, process.env, ctx.pulumi);
  const lo = loadOptions(p, o);
  const collect = async (reached: Map<string, Reached>): Promise<StatusReport> => {
    const facts = Promise.all(nodes.map((n) => nodeFacts(reached.get(n.name), n, gateOf(n), gpu, trace)));
    const deployments = Promise.all(
      scope.map(async ({ b, nodes: nbs }) => ({
        deployment: b.deployment,
        recipe: b.recipe,
        engine: b.engine,
        deploy: b.deploy,
        profile: b.profile ?? null,
        nodes: await Promise.all(
          nbs.map(async (nb) => {
            const r = reached.get(nb.node);
            // The load first: the liveness check's own token is no load, and one that generates needs none.
            const load = await entryLoad(r, b, nb, lo);
            const e = await statusEntry(r, b, nb, o, load.measured && (load.generationTokensPerS ?? 0) > 0);
            return { ...e, load };
          }),
        ),
      })),
    );
    const [n, d] = [await facts, await deployments];
    const ok = n.every((x) => x.reachable) && d.every((x) => x.nodes.every(isOk));
    return { stack: ctx.stack, ok, nodes: n, deployments: d };
  };
  const targets = nodes.map((n) => ({ node: n.name, conn: nodeConn(n) }));
  if (bool(p, "watch")) return withNodes(targets, auth, (reached) => watchLoad(ctx, () => collect(reached)));
  const report = await withNodes(targets, auth, collect);
  if (bool(p, "json")) ctx.out(jsonOut(statusSchema(), report));
  else if (nothingDeployed(report)) {
    const deployments = report.deployments.map((d) => d.deployment).join(", ") || "-";
    ctx.out(t("status.nothingDeployed", { stack: ctx.stack, deployments }));
    for (const l of statusText({ ...report, deployments: [] })) ctx.out(l);
  } else {
    const load = loadText(report);
    for (const l of [...statusText(report), ...(load.length > 0 ? ["", ...load] : [])]) ctx.out(l);
  }
  return report.ok ? 0 : 1;
}
