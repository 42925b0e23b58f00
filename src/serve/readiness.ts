/**
 * Readiness and verification (seed 001 steps 7-8): poll /v1/models on the node every 0.1 s until
 * it answers 200, failing fast when the engine exits; then one chat completion of a single token,
 * as a client would send it (a server can list its model and still not generate: a broken kernel,
 * a wedged scheduler), timed: the time to ready and the time to first token are the up's outcome.
 * Then the served name, max_model_len, the KV cache line and the proofs. The API key is read from
 * the node's files and reaches curl on stdin.
 */
import { curlWithKey, readApiKeyLines } from "../render/apikey";
import { waitWords } from "../render/plan";
import type { NodeBundle, Readiness } from "../render/types";
import { t, type MessageKey, type Params } from "../text/messages";
import { nodePath, NOW_S, nowMs, quote, shellValue, shellWords } from "../text/shell";
import { EXIT } from "./failure";
import { envFileOf } from "../render/node";
import { secretsEnvPath } from "../targets/secretsenv";
import { TRIPWIRE_FILES } from "../targets/tripwire";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";

/** Where the node keeps API_KEY: the script recipe's .env, else sm121's secrets.env. */
export function keyFiles(nb: NodeBundle): string[] {
  const env = envFileOf(nb);
  return [...(env === undefined ? [] : [env.path]), secretsEnvPath(nb.stateDir)];
}

/**
 * Shell lines defining `models_get`, which prints the HTTP code and leaves the body in $body_file,
 * and `chat_post SECONDS URL`, which posts $chat_req there and leaves the answer in $chat_file. The bearer
 * header reaches curl on stdin (render/apikey curlWithKey).
 */
export function curlFunction(nb: NodeBundle, url: string): string {
  const call = (out: string, opts: string, to: string) => {
    const where = to.startsWith("$") ? `"${to}"` : quote(to);
    return `  ${curlWithKey(`-s -o "${out}" -w '%{http_code}' ${opts} ${where}`)} 2>/dev/null || true`;
  };
  return [
    readApiKeyLines(keyFiles(nb)),
    "tmp=$(mktemp -d); body_file=$tmp/models; chat_file=$tmp/chat; chat_req=$tmp/request",
    "trap 'rm -rf \"$tmp\"' EXIT",
    "models_get() {",
    call("$body_file", "--max-time 3", url),
    "}",
    "chat_post() {",
    call("$chat_file", `--max-time "$1" -H 'Content-Type: application/json' --data-binary @"$chat_req"`, "$2"),
    "}",
  ].join("\n");
}

/**
 * The engine answered 401 or 403: it refuses the key sm121 sends (or asks for one sm121 does not
 * hold). Waiting cannot change that, so readiness ends at once, naming neither key.
 */
function keyRefused(what: string, code: string, evidence: string): string {
  const why = node("serve.keyRefused", { code: shellValue(code), what });
  const none = node("serve.keyMissing", { code: shellValue(code), what });
  const say = `if [ -n "$key" ]; then echo ${why} >&2; else echo ${none} >&2; fi`;
  return `${say}; ${evidence}; exit ${EXIT.keyRefused}`;
}

/** A message of sm121's that a readiness script prints on stderr, as one shell word (see shellValue). */
function node(key: MessageKey, args: Params): string {
  return shellWords(`sm121: ${t(key, args)}`);
}

export function readinessScript(nb: NodeBundle, r: Readiness): string {
  const api = nb.api;
  if (api === undefined) return ":";
  const d = nodePath(nb.stateDir);
  const url = `http://${api.host}:${api.port}/v1/models`;
  // The node's own reason, on stderr: the launcher's output (start.sh, dgpp-cluster up) and the engine log.
  // The launcher's last, since a launcher that refused (start.sh's own checks) says why at its end.
  const evidence =
    `{ echo ${shellWords(t("serve.engineLogTail"))}; ( ${nb.logs} ) 2>/dev/null | tail -n 15 || true; ` +
    `if [ -s ${d}/up.log ]; then echo ${shellWords(t("serve.launcherTail"))}; tail -n 10 ${d}/up.log; fi; } >&2`;
  const last = { url, code: shellValue("$code") };
  const waited = { url, seconds: shellValue("$((now - t0))"), code: shellValue("$code") };
  const waiting = shellWords(t("serve.waitingFor", { ...waited, of: r.timeoutS }));
  const engineLine = shellWords(t("serve.engineLogLine", { line: shellValue("$line") }));
  // The memory tripwire stopped the engine (its record is new with this start): the same failure
  // whatever the engine's own status reads; checked while it loads and once it answered.
  const tripped =
    `tripped() { if [ -f ${d}/${TRIPWIRE_FILES.record} ]; then ` +
    `line=$(tail -n 1 ${d}/logs/tripwire.log 2>/dev/null || true); ` +
    `echo ${node("serve.trippedBefore", { url, line: shellValue("$line") })} >&2; ${evidence}; ` +
    `exit ${EXIT.tripwire}; fi; }`;
  return [
    curlFunction(nb, url),
    tripped,
    `t0=${NOW_S}; ${nowMs("t0ms")}; deadline=$((t0 + ${r.timeoutS})); last=$t0; n=0; seen=""`,
    `echo ${shellWords(t("serve.waitingUpTo", { wait: waitWords(r), url }))}`,
    // /v1/models every 0.1 s; whether the engine still runs (a docker or tmux call) every 2 s,
    // the first time 2 s in: an engine just started has had no time to exit.
    "while :; do",
    "  code=$(models_get)",
    '  if [ "$code" = 200 ]; then break; fi',
    `  case "$code" in 401|403) ${keyRefused("/v1/models", "$code", evidence)};; esac`,
    "  n=$((n + 1)); if [ $((n % 20)) -ne 0 ]; then sleep 0.1; continue; fi",
    "  tripped",
    `  st=$( ( ${nb.status} ) 2>/dev/null | grep '^@sm121 ' | tail -n 1 || true)`,
    // A launcher (start.sh, dgpp-cluster up) that is still running, or exited 0, means "starting".
    `  launching=false; ` +
      `if [ -f ${d}/launcher.pid ] && kill -0 "$(cat ${d}/launcher.pid)" 2>/dev/null; then launching=true; fi`,
    `  if [ -f ${d}/launcher.exit ]; then ` +
      `if [ "$(cat ${d}/launcher.exit)" = 0 ]; then launching=true; else launching=failed; fi; fi`,
    `  case "$launching$st" in failed*|false*'"running":false'*) ` +
      `echo ${node("serve.engineExitedBefore", last)} >&2; ${evidence}; exit ${EXIT.engineExited};; esac`,
    `  now=${NOW_S}`,
    `  if [ "$now" -ge "$deadline" ]; then ` +
      `echo ${node("serve.noAnswerWithin", { ...last, seconds: r.timeoutS })} >&2; ` +
      `${evidence}; exit ${EXIT.readinessTimeout}; fi`,
    // Every 10 s: how long, what for, and the engine's last log line when it changed.
    `  if [ $((now - last)) -ge 10 ]; then echo ${waiting}; last=$now;`,
    `    line=$( ( SM121_LINES=1; export SM121_LINES; ${nb.logs} ) 2>/dev/null | tail -n 1 | cut -c1-200 || true)`,
    `    if [ -n "$line" ] && [ "$line" != "$seen" ]; then echo ${engineLine}; seen=$line; fi; fi`,
    "  sleep 0.1",
    "done",
    printRecord("models", '"body64":"%s"', '"$(base64 -w0 < "$body_file")"'),
    ...firstTokenLines(`http://${api.host}:${api.port}`, r.timeoutS, evidence),
    "tripped",
  ].join("\n");
}

/** What /v1/models answers: the models served, with their context length (vLLM, SGLang). */
export interface ModelList {
  data: Array<{ id: string; max_model_len?: number }>;
}

/**
 * An engine's /v1/models body read with one schema, by every reader (readiness, `sm121 status`,
 * `sm121 bench`): an OpenAI model list, `data` an array of objects each with a string `id` (and a
 * positive whole `max_model_len` where the engine says it). Anything else (no JSON, a `null` in
 * the list, an id that is no string) is undefined: what an engine answers is hostile input, and
 * one engine's bad answer is that engine's problem, never the reader's crash. zod is loaded here,
 * not at module scope (DESIGN: serialized providers load this module).
 */
export function readModels(body: string): ModelList | undefined {
  const { z } = require("zod") as typeof import("zod");
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return undefined;
  }
  const entry = z.looseObject({ id: z.string(), max_model_len: z.int().positive().nullish() });
  const r = z.looseObject({ data: z.array(entry) }).safeParse(v);
  if (!r.success) return undefined;
  const data = r.data.data.map((m) => ({
    id: m.id,
    ...(typeof m.max_model_len === "number" && { max_model_len: m.max_model_len }),
  }));
  return { data };
}

/**
 * The served models, as the readiness record carries /v1/models' body; undefined when it is no
 * model list (the served-name check then says the engine serves none).
 */
export function modelsListed(records: readonly NodeRecord[]): ModelList | undefined {
  const body64 = firstRecord(records, "models")?.body64;
  return body64 === undefined ? undefined : readModels(Buffer.from(body64, "base64").toString("utf8"));
}

/**
 * One chat completion of one token to the model /v1/models lists first (its id, a JSON string
 * without quotes, goes into the request file), within `$left` seconds; a completion instead when
 * the chat is refused as a bad request (a base model has no chat template). `request` writes the
 * request, `send` sends it and leaves the HTTP code in `$ccode` (000: no answer in time) and the
 * times around it in `$c0`, `$c1` (ms). Readiness and the plan-time look's liveness both send it.
 */
export function oneToken(base: string): { request: string[]; send: string[] } {
  const chatUrl = `${base}/v1/chat/completions`;
  const completions = `${base}/v1/completions`;
  return {
    request: [
      "body=; IFS= read -r -d '' body < \"$body_file\" || true",
      `re='"id"[[:space:]]*:[[:space:]]*"([^"\\]*)"'`,
      "model=; if [[ $body =~ $re ]]; then model=${BASH_REMATCH[1]}; fi",
      `printf '{"model":"%s","messages":[{"role":"user","content":"Reply with OK."}],"max_tokens":1}' ` +
        `"$model" > "$chat_req"`,
    ],
    send: [
      `${nowMs("c0")}; ccode=$(chat_post "$left" ${quote(chatUrl)}); ${nowMs("c1")}`,
      // A base model without a chat template answers 400 to a chat: its first token is a completion's.
      'if [ "$ccode" = 400 ]; then',
      `  printf '{"model":"%s","prompt":"OK","max_tokens":1}' "$model" > "$chat_req"`,
      `  ${nowMs("c0")}; ccode=$(chat_post "$left" ${quote(completions)}); ${nowMs("c1")}`,
      "fi",
    ],
  };
}

/**
 * The first token of readiness, within what is left of the readiness timeout (at least 5 s). No
 * answer, or an error, fails readiness with its own exit code and message.
 */
function firstTokenLines(base: string, timeoutS: number, evidence: string): string[] {
  const chatUrl = `${base}/v1/chat/completions`;
  const one = oneToken(base);
  const noToken = node("serve.noFirstToken", { url: chatUrl, left: shellValue("$left"), timeoutS });
  const body = shellValue(`$(head -c 300 "$chat_file" | tr -d '\\n')`);
  return [
    ...one.request,
    `left=$((deadline - ${NOW_S})); if [ "$left" -lt 5 ]; then left=5; fi`,
    ...one.send,
    `case "$ccode" in 401|403) ${keyRefused("/v1/chat/completions", "$ccode", evidence)};; esac`,
    'if [ "$ccode" != 200 ]; then',
    `  if [ "$ccode" = 000 ]; then echo ${noToken} >&2;`,
    `  else echo ${node("serve.firstTokenHttp", { url: chatUrl, code: shellValue("$ccode"), body })} >&2; fi`,
    `  ${evidence}; exit ${EXIT.noFirstToken}`,
    "fi",
    printRecord("firstToken", '"readyMs":%d,"ttftMs":%d', "$((c1 - t0ms)) $((c1 - c0))"),
  ];
}

/** Prints the KV cache line and each proof found in the engine log, as records; `also` reads the log too ("$log"). */
export function verifyScript(nb: NodeBundle, r: Readiness, also = ":"): string {
  const lines = ["log=$(mktemp)", `( SM121_LINES=5000; export SM121_LINES; ${nb.logs} ) > "$log" 2>&1 || true`];
  if (r.kvCachePattern !== undefined) {
    lines.push(`kv=$(grep -E ${quote(r.kvCachePattern)} "$log" | tail -n 1 || true)`);
    lines.push(printRecord("kvCacheLine", '"line64":"%s"', '"$(printf \'%s\' "$kv" | base64 -w0)"'));
    // Kept on the node: the log rotates (docker keeps 3 x 50 MB), status falls back to this.
    lines.push(`if [ -n "$kv" ]; then printf '%s\\n' "$kv" > ${nodePath(nb.stateDir)}/kv-cache.txt; fi`);
  }
  r.proofs.forEach((p, i) => {
    const found = (f: boolean) => printRecord("proof", `"index":${i},"found":${f}`);
    lines.push(`if grep -qF -- ${quote(p)} "$log"; then ${found(true)}; else ${found(false)}; fi`);
  });
  if (also !== ":") lines.push(also);
  lines.push('rm -f "$log"');
  // A launcher (start.sh) still waiting after the server answers will give up on it later.
  const d = nodePath(nb.stateDir);
  lines.push(
    `for _ in $(seq 1 20); do ` +
      `[ -f ${d}/launcher.pid ] && kill -0 "$(cat ${d}/launcher.pid)" 2>/dev/null || break; sleep 0.25; done`,
  );
  const waiting = `[ -f ${d}/launcher.pid ] && kill -0 "$(cat ${d}/launcher.pid)" 2>/dev/null`;
  lines.push(`if ${waiting}; then ${printRecord("launcherRunning")}; fi`);
  return lines.join("\n");
}
