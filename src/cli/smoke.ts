/**
 * `sm121 smoke [deployment] [--node N] [--yes] [--json]`: one short chat completion on the node's
 * endpoint (without --node: the API node of the deployment, or of the site's only one), sent by
 * curl ON the node (as an operator there would), with the API key read from the node's files and
 * given to curl on stdin, never on a command line. A protected node needs --yes.
 *
 * The keyed curl here is shared with `status` (its /v1/models health check).
 */
import { withHosts, type Host } from "../remote";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { curlWithKey, readApiKeyLines } from "../render/apikey";
import { quote } from "../text/shell";
import { keyFiles } from "../serve/readiness";
import { UsageError, bool, type Parsed } from "./args";
import { cliAuth, hostOf, selectedDeployment, selectedNode } from "./connect";
import { contextProject, type CliContext } from "./context";
import { t } from "../text/messages";
import { jsonOut, smokeSchema, type SmokeReport, type SmokeResult } from "./schemas";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";

export interface CurlRequest {
  method: "GET" | "POST";
  url: string;
  /** JSON text of a POST; it reaches the node base64-encoded, so no quoting is involved. */
  body?: string;
  timeoutS: number;
}

/**
 * A node-side script that sends one request with curl and prints a `smoke` record: `http` is
 * "CODE TTFB TOTAL", `body64` the answer. The bearer key goes to curl as a header on stdin (render/apikey).
 */
export function nodeCurlScript(nb: NodeBundle, req: CurlRequest): string {
  const post =
    req.body === undefined
      ? []
      : [`printf '%s' ${quote(Buffer.from(req.body).toString("base64"))} | base64 -d > "$req_file"`];
  const data = req.body === undefined ? "" : ` -X POST -H 'Content-Type: application/json' --data-binary @"$req_file"`;
  return [
    readApiKeyLines(keyFiles(nb)),
    "resp_file=$(mktemp); req_file=$(mktemp)",
    'trap \'rm -f "$resp_file" "$req_file"\' EXIT',
    ...post,
    `http=$(${curlWithKey(
      `-s -o "$resp_file" -w '%{http_code} %{time_starttransfer} %{time_total}' ` +
        `--max-time ${req.timeoutS}${data} ${quote(req.url)}`,
    )} 2>/dev/null || true)`,
    printRecord("smoke", '"http":"%s","body64":"%s"', '"$http" "$(base64 -w0 < "$resp_file")"'),
  ].join("\n");
}

export interface CurlResult {
  code: number;
  firstByteMs: number;
  totalMs: number;
  body: string;
}

export function curlResult(records: readonly NodeRecord[]): CurlResult | undefined {
  const r = firstRecord(records, "smoke");
  if (r === undefined) return undefined;
  const [code = "0", ttfb = "0", total = "0"] = r.http.trim().split(/\s+/);
  const ms = (s: string) => Math.max(0, Math.round(Number(s) * 1000 * 10) / 10) || 0;
  const body = Buffer.from(r.body64, "base64").toString("utf8");
  return { code: Number(code) || 0, firstByteMs: ms(ttfb), totalMs: ms(total), body };
}

export function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const PROMPT = "Reply with one short sentence: which model are you?";

interface Completion {
  choices?: Array<{ message?: { content?: string | null; reasoning_content?: string | null } }>;
  usage?: { completion_tokens?: number };
  message?: string;
  error?: unknown;
}

async function smokeOne(h: Host, b: DeploymentBundle, nb: NodeBundle): Promise<SmokeResult> {
  const url = `${nb.api?.url ?? ""}/v1/chat/completions`;
  const model = b.readiness.servedName ?? null;
  const body = JSON.stringify({
    ...(model !== null && { model }),
    messages: [{ role: "user", content: PROMPT }],
    max_tokens: 48,
    temperature: 0,
  });
  const res = await h.run(nodeCurlScript(nb, { method: "POST", url, body, timeoutS: 120 }), {
    step: "smoke",
    timeoutMs: 150_000,
  });
  const c = curlResult(res.records);
  const base = { deployment: b.deployment, url, model };
  if (c === undefined)
    return {
      ...base,
      ok: false,
      httpCode: 0,
      latencyMs: 0,
      firstByteMs: 0,
      answer: null,
      completionTokens: null,
      error: t("smoke.noRecord", { stderr: res.stderr.trim().slice(-300) }),
    };
  const parsed = parseJson(c.body) as Completion | undefined;
  const msg = parsed?.choices?.[0]?.message;
  const answer = msg?.content ?? msg?.reasoning_content ?? null;
  const tokens = parsed?.usage?.completion_tokens;
  const ok = c.code === 200 && answer !== null && answer.trim() !== "";
  const error = ok
    ? null
    : c.code === 0
      ? t("smoke.noAnswer", { url })
      : t("smoke.httpError", { code: c.code, body: c.body.slice(0, 300) });
  return {
    ...base,
    ok,
    httpCode: c.code,
    latencyMs: c.totalMs,
    firstByteMs: c.firstByteMs,
    answer,
    completionTokens: typeof tokens === "number" ? tokens : null,
    error,
  };
}

/** Why a node has nothing to smoke: no deployment there, or only ranks without an API (name the node that has it). */
export function noEndpoint(bundles: readonly DeploymentBundle[], node: string, only: string | undefined): string[] {
  const scope = bundles.filter((b) => only === undefined || b.deployment === only);
  const ranks = scope.flatMap((b) => b.nodes.filter((nb) => nb.node === node).map((nb) => ({ b, nb })));
  if (ranks.length > 0) {
    return ranks.map(({ b, nb }) =>
      t("smoke.noApi", {
        node,
        rank: nb.rank,
        deployment: b.deployment,
        apiNode: b.nodes.find((x) => x.api !== undefined)?.node ?? "-",
      }),
    );
  }
  if (only === undefined) return [t("smoke.noDeployment", { node })];
  return [
    t("smoke.notInDeployment", {
      node,
      deployment: only,
      nodes: scope.flatMap((b) => b.nodes.map((x) => x.node)).join(", ") || "-",
    }),
  ];
}

/**
 * The node to smoke without --node: the API node of the deployment named, or of the site's only
 * deployment (its only node, for a deployment of one).
 */
function apiNodeOf(bundles: readonly DeploymentBundle[], only: string | undefined, stack: string): string {
  const only1 = bundles.length === 1 ? bundles[0] : undefined;
  const b = only === undefined ? only1 : selectedDeployment(bundles, only, stack);
  const deployments = bundles.map((x) => x.deployment).join(", ") || "-";
  if (b === undefined) throw new UsageError(t("smoke.needsNode", { deployments }));
  const api = b.nodes.find((nb) => nb.api !== undefined);
  if (api === undefined) throw new UsageError(t("smoke.noApiNode", { deployment: b.deployment }));
  return api.node;
}

export async function smokeCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const project = contextProject(ctx);
  const only = p.positional[0];
  const node = selectedNode(project.site, p) ?? apiNodeOf(project.bundles, only, ctx.stack);
  const targets = project.bundles
    .filter((b) => only === undefined || b.deployment === only)
    .flatMap((b) => b.nodes.filter((nb) => nb.node === node && nb.api !== undefined).map((nb) => ({ b, nb })));
  const first = targets[0];
  if (first === undefined) {
    for (const l of noEndpoint(project.bundles, node, only)) ctx.err(l);
    return 2;
  }
  if (project.site.nodes[node]?.protected === true && !bool(p, "yes")) {
    ctx.err(t("smoke.protected", { node }));
    return 2;
  }
  const { auth } = cliAuth(project.site, p, process.env, ctx.pulumi);
  const results = await withHosts([{ node, conn: first.nb.conn }], auth, (hosts) =>
    Promise.all(targets.map((x) => smokeOne(hostOf(hosts, x.nb), x.b, x.nb))),
  );
  const report: SmokeReport = { stack: ctx.stack, node, ok: results.every((r) => r.ok), results };
  if (bool(p, "json")) ctx.out(jsonOut(smokeSchema(), report));
  else {
    for (const r of results) {
      ctx.out(
        t("smoke.line", {
          deployment: r.deployment,
          node,
          url: r.url,
          code: r.httpCode,
          ms: r.latencyMs,
          ttfb: r.firstByteMs,
        }),
      );
      if (r.answer !== null) ctx.out(`  ${t("smoke.answer")}: ${r.answer.trim()}`);
      if (r.error !== null) ctx.out(`  ${t("common.error")}: ${r.error}`);
    }
  }
  return report.ok ? 0 : 1;
}
