/**
 * The liveness of a serving engine, part of the plan-time look (./probe servingScript) and of
 * `sm121 status`: one 1-token completion within sm121:liveness.timeoutS, and the engine's own
 * request and token counters on /metrics around it, which tell an engine that works through a
 * queue from one that hangs. The node sends /metrics' lines of those counters as they are
 * (base64); they are read here, as Prometheus reads them (engines/exposition): a counter that is
 * no finite number (NaN, an infinite one) makes the counters unknown, never a broken look.
 */
import type { Host } from "../remote";
import type { NodeBundle } from "../render/types";
import { parseExposition, seriesSum } from "../engines/exposition";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";
import { msg, type Msg } from "../text/messages";
import { quote } from "../text/shell";
import { curlFunction, oneToken } from "./readiness";
import { passiveWords } from "./passive";

/**
 * A serving engine's liveness: `ok` (a token came), `busy` (no token in time, but its own counters
 * on /metrics moved meanwhile: it works through a queue), `hung` (it runs and answers nothing, or
 * answers /v1/models and produces no token while its counters stand still or are unknown),
 * `refused` (it answered the completion with an HTTP error: no hang, but no token either),
 * `loading` (it does not answer /v1/models yet, and started less than its readiness wait ago: a
 * load, which an up waits for and never restarts: ./loading).
 */
export interface LiveCheck {
  /** `passive`: a protected node's check without a request (./passive) that saw nothing wrong. */
  verdict: "ok" | "busy" | "hung" | "refused" | "loading" | "passive";
  timeoutS: number;
  /** HTTP code of /v1/models (0: no answer), and of the completion. */
  modelsCode: number;
  completionCode?: number;
  /** Milliseconds to the token, when one came. */
  ms?: number;
  /** The engine's request and token counters before and after (null: no /metrics, or unknown). */
  progress?: { before: number; after: number } | null;
  /** A check without a request (./passive): the states of the engine's processes, its log's age. */
  passive?: { states: string; logAgeS: number | null };
}

/**
 * vLLM's and SGLang's request and token counters. Requests that ended aborted (vLLM's
 * finished_reason="abort", as the check's own request does when its client gives up) are no
 * progress.
 */
const PROGRESS_COUNTERS = [
  "vllm:request_success_total",
  "vllm:generation_tokens_total",
  "sglang:num_requests_total",
  "sglang:generation_tokens_total",
];

/**
 * The counters' sum in one read of /metrics (base64 of its lines that name them); undefined when
 * /metrics did not answer, has none of them, or one is unknown (a value no finite number).
 */
function countersOf(lines64: string | null | undefined): number | undefined {
  if (lines64 === null || lines64 === undefined) return undefined;
  const e = parseExposition(Buffer.from(lines64, "base64").toString("utf8"));
  const each = PROGRESS_COUNTERS.map((c) => seriesSum(e, c, (l) => l["finished_reason"] !== "abort"));
  if (each.includes("unknown") || each.every((x) => x === "absent")) return undefined;
  return each.reduce<number>((a, x) => a + (typeof x === "number" ? x : 0), 0);
}

/**
 * One 1-token completion to a serving engine within `timeoutS`, with the deployment's API key (read
 * on the node, to curl on stdin), and the engine's counters on /metrics around it. Read-only.
 */
export function livenessScript(nb: NodeBundle, timeoutS: number): string {
  const api = nb.api;
  if (api === undefined) return ":";
  const base = `http://${api.host}:${api.port}`;
  const one = oneToken(base);
  const names = PROGRESS_COUNTERS.map((c) => `-e ${quote(c)}`).join(" ");
  return [
    curlFunction(nb, `${base}/v1/models`),
    // /metrics is outside what vLLM's and SGLang's keys guard. Its lines that name a counter, as
    // the engine wrote them (a JSON string of base64), or null when it does not answer.
    "progress() { local out",
    `  out=$(curl -sf --max-time 3 ${quote(`${base}/metrics`)} 2>/dev/null) || { printf null; return 0; }`,
    `  printf '"%s"' "$(printf '%s\\n' "$out" | { grep -F ${names} || true; } | base64 -w0)"`,
    "}",
    "mcode=$(models_get)",
    `if [ "$mcode" != 200 ]; then ${printRecord("live", '"modelsCode":%d', '"$((10#${mcode:-0}))"')}; exit 0; fi`,
    "p0=$(progress)",
    ...one.request,
    `left=${timeoutS}`,
    ...one.send,
    // The counters after it tell a busy engine from a hung one: only a completion that failed asks.
    'p1=null; if [ "$ccode" != 200 ]; then p1=$(progress); fi',
    printRecord(
      "live",
      '"modelsCode":200,"completionCode":%d,"ms":%d,"before64":%s,"after64":%s',
      '"$((10#${ccode:-0}))" $((c1 - c0)) "$p0" "$p1"',
    ),
  ].join("\n");
}

/** The verdict from the script's record. */
export function liveCheckOf(records: readonly NodeRecord[], timeoutS: number): LiveCheck | undefined {
  const r = firstRecord(records, "live");
  if (r === undefined) return undefined;
  const { modelsCode, completionCode } = r;
  const before = countersOf(r.before64);
  const after = countersOf(r.after64);
  const progress = before !== undefined && after !== undefined ? { before, after } : null;
  const base = { timeoutS, modelsCode, ...(completionCode !== undefined && { completionCode }), progress };
  // A key the engine refuses is no hang: the look says so, and restarts nothing for it.
  if (modelsCode === 401 || modelsCode === 403) return { ...base, verdict: "refused" };
  if (modelsCode !== 200) return { ...base, verdict: "hung" };
  const ms = r.ms;
  if (completionCode === 200) return { ...base, verdict: "ok", ...(ms !== undefined && { ms }) };
  if (completionCode !== 0) return { ...base, verdict: "refused" };
  return { ...base, verdict: progress !== null && progress.after > progress.before ? "busy" : "hung" };
}

/** A hung engine on `node`, as a message: "spark2: answers /v1/models but no token in 10 s". */
export function liveWords(node: string, l: LiveCheck): Msg {
  if (l.passive !== undefined) return passiveWords(node, l);
  if (l.modelsCode === 0) return msg("serve.look.modelsSilent", { node });
  if (l.modelsCode !== 200) return msg("serve.look.modelsCode", { node, code: l.modelsCode });
  const p = l.progress;
  const counters = p === undefined || p === null ? "" : msg("serve.look.countersStill", { before: p.before });
  return msg("serve.look.noToken", { node, timeoutS: l.timeoutS, counters });
}

/** Runs the liveness check on a node whose engine runs this bundle. */
export async function probeLiveness(host: Host, nb: NodeBundle, timeoutS: number): Promise<LiveCheck | undefined> {
  // The script's own curl times out; the channel gets room for /metrics and /v1/models around it.
  const res = await host.run(livenessScript(nb, timeoutS), { step: "liveness", timeoutMs: (timeoutS + 30) * 1000 });
  return liveCheckOf(res.records, timeoutS);
}
