/**
 * The load generator of `sm121 bench` and of the gate of an up (./gate): streaming chat completions
 * over node:http with one keep-alive Agent, server-sent events parsed incrementally, C workers each sending its next
 * request as soon as the last one ends. It measures time to first token, inter-token latency and
 * end-to-end latency per request, and its own CPU time, so a run shows whether the client could
 * have been the bottleneck.
 */
import * as http from "node:http";
import * as https from "node:https";
import { performance } from "node:perf_hooks";
import { Samples } from "./loadstats";
import { t } from "../text/messages";
import { readModels } from "./readiness";

/**
 * Server-sent events, incrementally: `data:` lines (joined with "\n" when an event has several)
 * are delivered when the blank line that ends the event arrives. Other fields and comments are
 * ignored. Lines end with "\n" or "\r\n".
 */
export class SseParser {
  private rest = "";
  private pending: string | null = null;

  push(chunk: string, emit: (data: string) => void): void {
    const s = this.rest === "" ? chunk : this.rest + chunk;
    let start = 0;
    for (;;) {
      const nl = s.indexOf("\n", start);
      if (nl === -1) break;
      const end = nl > start && s.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
      if (end === start) {
        if (this.pending !== null) {
          const data = this.pending;
          this.pending = null;
          emit(data);
        }
      } else if (s.startsWith("data:", start)) {
        const v = s.slice(s.charCodeAt(start + 5) === 32 ? start + 6 : start + 5, end);
        this.pending = this.pending === null ? v : `${this.pending}\n${v}`;
      }
      start = nl + 1;
    }
    this.rest = start === s.length ? "" : s.slice(start);
  }
}

export interface LoadOptions {
  urls: readonly string[];
  model: string;
  apiKey?: string;
  concurrency: number;
  requests: number;
  promptTokens: number;
  maxTokens: number;
  timeoutMs: number;
  onProgress?: (done: number, errors: number) => void;
  /** Checked before each request: stop sending (Ctrl-C) and report what finished. */
  stopped?: () => boolean;
  /** Requests started per second at most (request i no earlier than i/rate s after the start). */
  ratePerS?: number;
  /**
   * The user message of request i (the gate's fixed prompt set);
   * by default common words, a distinct first word each.
   */
  prompt?: (i: number) => string;
}

export interface LoadResult {
  completed: number;
  errors: number;
  /** Requests a gateway answered after retrying them on another backend (its own header says so). */
  retried: number;
  errorSamples: string[];
  durationMs: number;
  outputTokens: number;
  ttft: Samples;
  itl: Samples;
  e2e: Samples;
  cpuMs: number;
}

const WORDS = (
  "the quick brown fox jumps over a lazy dog while seven small robots count every grain of sand " +
  "on the long quiet beach"
).split(" ");

/** About `n` tokens of prompt text: common words, about one token each. */
export function promptText(n: number): string {
  const out: string[] = [];
  for (let i = 0; i < n; i++) out.push(WORDS[i % WORDS.length] ?? "word");
  return out.join(" ");
}

const CONTENT = 'content":"';

/** LiteLLM's proxy says how often it retried a request in this response header (0: answered at once). */
const RETRIES_HEADER = "x-litellm-attempted-retries";

/** Resolves at `at` (performance.now() time), at once when that has passed. */
const until = (at: number): Promise<void> => {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, at - performance.now())));
};

/**
 * Whether a stream chunk carries text, without JSON.parse for the common case: a compact chunk
 * with a non-empty `content` (or `reasoning_content`) string. A quote inside a JSON string is
 * escaped, so `content":"` cannot occur inside a value. undefined: parse it (the role chunk's
 * empty content, the finish chunk, usage, errors, and anything written another way).
 */
export function hasText(data: string): boolean | undefined {
  const i = data.indexOf(CONTENT);
  if (i === -1) return undefined;
  return data.charCodeAt(i + CONTENT.length) === 34 ? undefined : true;
}

interface Chunk {
  choices?: Array<{ delta?: { content?: unknown; reasoning_content?: unknown } }>;
  usage?: { completion_tokens?: unknown } | null;
  error?: unknown;
}

export async function runLoad(o: LoadOptions): Promise<LoadResult> {
  const agent = {
    http: new http.Agent({ keepAlive: true, maxSockets: o.concurrency }),
    https: new https.Agent({ keepAlive: true, maxSockets: o.concurrency }),
  };
  const targets = o.urls.map((u) => new URL(`${u.replace(/\/+$/, "")}/v1/chat/completions`));
  const words = promptText(Math.max(0, o.promptTokens - 1));
  const prompt = o.prompt ?? ((i: number) => `${i} ${words}`);
  const r: LoadResult = {
    completed: 0,
    errors: 0,
    retried: 0,
    errorSamples: [],
    durationMs: 0,
    outputTokens: 0,
    ttft: new Samples(),
    itl: new Samples(),
    e2e: new Samples(),
    cpuMs: 0,
  };
  const fail = (why: string) => {
    r.errors++;
    if (r.errorSamples.length < 5) r.errorSamples.push(why);
  };

  const one = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const url = targets[i % targets.length] as URL;
      // A distinct first word per request, so no prefix cache answers from an earlier one.
      const body = JSON.stringify({
        model: o.model,
        messages: [{ role: "user", content: prompt(i) }],
        max_tokens: o.maxTokens,
        stream: true,
        stream_options: { include_usage: true },
        ignore_eos: true,
        temperature: 0,
      });
      const headers: http.OutgoingHttpHeaders = {
        "content-type": "application/json",
        accept: "text/event-stream",
        "content-length": Buffer.byteLength(body),
      };
      if (o.apiKey !== undefined) headers["authorization"] = `Bearer ${o.apiKey}`;
      const t0 = performance.now();
      let last = -1;
      let tokens = 0;
      let usage = -1;
      let done = false;
      let settled = false;
      const end = (error?: string) => {
        if (settled) return;
        settled = true;
        if (error !== undefined) fail(error);
        else if (!done) fail(t("bench.noDone"));
        else {
          r.completed++;
          r.outputTokens += usage >= 0 ? usage : tokens;
          r.e2e.push(performance.now() - t0);
        }
        o.onProgress?.(r.completed, r.errors);
        resolve();
      };
      const onEvent = (data: string) => {
        if (data === "[DONE]") {
          done = true;
          return;
        }
        let text = hasText(data);
        if (text === undefined) {
          let c: Chunk;
          try {
            c = JSON.parse(data) as Chunk;
          } catch {
            return end(t("bench.notJson", { data: data.slice(0, 120) }));
          }
          if (c.error !== undefined)
            return end(t("bench.streamError", { error: JSON.stringify(c.error).slice(0, 200) }));
          const d = c.choices?.[0]?.delta;
          const s = d?.content ?? d?.reasoning_content;
          text = typeof s === "string" && s.length > 0;
          if (c.usage !== undefined && c.usage !== null && typeof c.usage.completion_tokens === "number")
            usage = c.usage.completion_tokens;
        }
        if (text) {
          const now = performance.now();
          if (last < 0) r.ttft.push(now - t0);
          else r.itl.push(now - last);
          last = now;
          tokens++;
        }
      };
      const mod = url.protocol === "https:" ? https : http;
      // A kept-alive connection the server closes as this request goes out (its idle timeout: a
      // proxy's is a few seconds) ends with ECONNRESET before any answer: the request is sent
      // once more on a connection of its own, as Node's docs advise (request.reusedSocket).
      const send = (fresh: boolean): void => {
        let answered = false;
        const req = mod.request(
          {
            protocol: url.protocol,
            hostname: url.hostname,
            port: url.port,
            path: url.pathname,
            method: "POST",
            headers,
            agent: fresh ? false : url.protocol === "https:" ? agent.https : agent.http,
            timeout: o.timeoutMs,
          },
          (res) => {
            answered = true;
            res.setEncoding("utf8");
            if (Number(res.headers[RETRIES_HEADER] ?? 0) > 0) r.retried++;
            if (res.statusCode !== 200) {
              let text = "";
              res.on("data", (s: string) => {
                if (text.length < 300) text += s;
              });
              res.on("end", () => end(`HTTP ${res.statusCode ?? 0}: ${text.slice(0, 300).trim()}`));
              res.on("error", (e) => end(e.message));
              return;
            }
            const parser = new SseParser();
            res.on("data", (s: string) => parser.push(s, onEvent));
            res.on("end", () => end());
            res.on("error", (e) => end(e.message));
          },
        );
        req.on("timeout", () => req.destroy(new Error(t("bench.noAnswerMs", { ms: o.timeoutMs }))));
        req.on("error", (e: NodeJS.ErrnoException) => {
          if (!fresh && !answered && req.reusedSocket && e.code === "ECONNRESET") return send(true);
          end(e.message);
        });
        req.end(body);
      };
      send(false);
    });

  let next = 0;
  const paced = (i: number) => (o.ratePerS === undefined ? Promise.resolve() : until(t0 + (i * 1000) / o.ratePerS));
  const worker = async () => {
    while (next < o.requests && o.stopped?.() !== true) {
      const i = next++;
      await paced(i);
      await one(i);
    }
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(o.concurrency, o.requests) }, worker));
  r.durationMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  r.cpuMs = (cpu.user + cpu.system) / 1000;
  agent.http.destroy();
  agent.https.destroy();
  return r;
}

/** GET /v1/models: reachability, the key, and the model when none is named. */
export function getModels(
  base: string,
  apiKey: string | undefined,
): Promise<{ code: number; ids: string[]; error?: string }> {
  return new Promise((resolve) => {
    const url = new URL(`${base.replace(/\/+$/, "")}/v1/models`);
    const mod = url.protocol === "https:" ? https : http;
    const req = mod.get(
      url,
      { headers: apiKey === undefined ? {} : { authorization: `Bearer ${apiKey}` }, timeout: 10_000 },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (s: string) => (text += s));
        res.on("end", () => {
          resolve({
            code: res.statusCode ?? 0,
            ids: (readModels(text)?.data ?? []).map((m) => m.id),
            ...(res.statusCode !== 200 && { error: `HTTP ${res.statusCode ?? 0}: ${text.slice(0, 200)}` }),
          });
        });
      },
    );
    req.on("timeout", () => req.destroy(new Error(t("bench.noAnswerS", { seconds: 10 }))));
    req.on("error", (e) => resolve({ code: 0, ids: [], error: e.message }));
  });
}
