"use strict";
// The OpenAI-compatible HTTP API of every fake engine: /v1/models,
// /v1/chat/completions (plain and SSE streaming), /v1/completions, /health,
// /version, /metrics. Answers are deterministic words; max_tokens is honoured.
const http = require("node:http");
const crypto = require("node:crypto");
const { createExporter } = require("./exporter");
const { liveMode } = require("./common");
const { nodeName } = require("../lib/node");

function answerWords(plan) {
  const on = nodeName() || "node";
  const answer = `This is a simulated answer from ${plan.engine} serving ${plan.served[0]} on ${on}.`;
  return `${answer} The quick brown fox jumps over the lazy dog.`.split(" ");
}

function countWords(messages) {
  let n = 0;
  for (const m of messages) {
    const content =
      typeof m.content === "string"
        ? m.content
        : Array.isArray(m.content)
          ? m.content.map((p) => p.text || "").join(" ")
          : "";
    n += content.split(/\s+/).filter((w) => w).length;
  }
  return n;
}

const sha = (v) => crypto.createHash("sha256").update(Buffer.from(v, "utf8")).digest("hex");

/** What the engine was given: the sha256 of each API key (argv, key file or VLLM_API_KEY) and of HF_TOKEN. */
function received(plan) {
  const keys = plan.apiKey === null ? [] : Array.isArray(plan.apiKey) ? plan.apiKey : [plan.apiKey];
  const hf = process.env.HF_TOKEN;
  return { apiKeySha256: keys.map(sha), hfTokenSha256: hf === undefined ? null : sha(hf) };
}

function createServer(plan, behaviour) {
  let running = 0;
  // Set on SIGTERM with vLLM's --shutdown-timeout: what runs finishes, anything new is refused.
  let draining = false;
  const m = plan.metrics;
  const limits = m && m.on ? { maxRunning: m.maxRunning, kvTokens: m.kvTokens(behaviour) } : null;
  const exporter = limits ? createExporter(plan, limits, behaviour.metricValues) : null;
  const send = (res, status, body, headers) => {
    res.writeHead(status, { "content-type": "application/json", ...(headers || {}) });
    res.end(body === undefined ? "" : JSON.stringify(body));
  };
  const error = (res, status, message, type) =>
    send(res, status, { object: "error", message, type, param: null, code: status });

  async function complete(req, res, body, chat) {
    if (body.model !== undefined && !plan.served.includes(body.model))
      return error(res, 404, `The model \`${body.model}\` does not exist.`, "NotFoundError");
    if (chat && (!Array.isArray(body.messages) || body.messages.length === 0))
      return error(res, 400, "messages: field required (a non-empty list)", "BadRequestError");
    if (!chat && typeof body.prompt !== "string")
      return error(res, 400, "prompt: field required (a string)", "BadRequestError");
    const limit = body.max_tokens !== undefined ? body.max_tokens : body.max_completion_tokens;
    if (limit !== undefined && (!Number.isInteger(limit) || limit < 1))
      return error(res, 400, `max_tokens must be at least 1, got ${limit}.`, "BadRequestError");
    // The request is accepted and never answered; the client's own timeout ends it.
    if (behaviour.mode === "chat-never-answers") return new Promise(() => {});
    const all = answerWords(plan);
    // ignore_eos (vLLM's benchmark switch) generates exactly max_tokens words
    const n = limit === undefined ? all.length : body.ignore_eos === true ? limit : Math.min(limit, all.length);
    const words = Array.from({ length: n }, (_, i) => all[i % all.length]);
    const finish =
      limit !== undefined && n === limit && (body.ignore_eos === true || n < all.length) ? "length" : "stop";
    const promptTokens = chat ? countWords(body.messages) : body.prompt.split(/\s+/).filter((w) => w).length;
    const usage = {
      prompt_tokens: promptTokens,
      completion_tokens: words.length,
      total_tokens: promptTokens + words.length,
    };
    const id = `${chat ? "chatcmpl" : "cmpl"}-${crypto.randomBytes(12).toString("hex")}`;
    const created = Math.floor(Date.now() / 1000);
    const model = body.model || plan.served[0];
    const delay = behaviour.tokensPerSecond > 0 ? 1000 / behaviour.tokensPerSecond : 0;
    const pause = () => (delay > 0 ? new Promise((r) => setTimeout(r, delay)) : Promise.resolve());
    // The engine's scheduler: the request waits for a slot and KV cache, then each token counts.
    const tracked = exporter && exporter.begin(promptTokens, body.stream === true);
    // A hung engine (behaviour mode "hung", written after this engine started) takes the request
    // and never produces a token: the request stays in its scheduler, its counters stand still,
    // and a client that gives up aborts it (vLLM counts finished_reason "abort").
    if (liveMode() === "hung") {
      res.on("close", () => {
        if (tracked) tracked.end("abort");
      });
      return new Promise(() => {});
    }
    const produce = async () => {
      await pause();
      if (tracked) tracked.token();
    };
    if (tracked) await tracked.admitted;
    running++;
    try {
      if (!body.stream) {
        for (let i = 0; i < words.length; i++) await produce();
        const text = words.join(" ");
        const choice = chat
          ? {
              index: 0,
              message: { role: "assistant", content: text, tool_calls: [] },
              logprobs: null,
              finish_reason: finish,
            }
          : { index: 0, text, logprobs: null, finish_reason: finish };
        return send(res, 200, {
          id,
          object: chat ? "chat.completion" : "text_completion",
          created,
          model,
          choices: [choice],
          usage,
        });
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const object = chat ? "chat.completion.chunk" : "text_completion";
      const chunk = (choice, extra) => {
        const data = { id, object, created, model, choices: choice ? [choice] : [], ...(extra || {}) };
        res.write(`data: ${JSON.stringify(data)}\n\n`);
      };
      if (chat) chunk({ index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null });
      for (let i = 0; i < words.length; i++) {
        await produce();
        const piece = i === 0 ? words[i] : ` ${words[i]}`;
        chunk(
          chat
            ? { index: 0, delta: { content: piece }, logprobs: null, finish_reason: null }
            : { index: 0, text: piece, logprobs: null, finish_reason: null },
        );
      }
      chunk(
        chat
          ? { index: 0, delta: {}, logprobs: null, finish_reason: finish }
          : { index: 0, text: "", logprobs: null, finish_reason: finish },
      );
      if (body.stream_options && body.stream_options.include_usage) chunk(null, { usage });
      res.end("data: [DONE]\n\n");
    } finally {
      running--;
      if (tracked) tracked.end(finish);
    }
  }

  function route(req, res, raw) {
    const url = (req.url || "/").split("?")[0];
    const get = req.method === "GET";
    if (url === "/health") return get ? send(res, 200) : send(res, 405, { detail: "Method Not Allowed" });
    // The test site's own window: the sha256 of each secret the engine started with, so that a
    // test checks them byte for byte while no secret is ever printed or served.
    if (url === "/test-site/received" && get) return send(res, 200, received(plan));
    if (plan.healthOnly) return send(res, 404, { detail: "Not Found" });
    // vLLM guards /v1/ with its key; SGLang every path but /health*, /ready* and /metrics*
    // (sglang/srt/utils/auth.py).
    const guarded = plan.engine === "sglang" ? !/^\/(health|ready|metrics)/.test(url) : url.startsWith("/v1/");
    if (guarded && plan.apiKey !== null) {
      // vLLM takes several keys (--api-key is nargs "+"); any one of them opens the API.
      const keys = Array.isArray(plan.apiKey) ? plan.apiKey : [plan.apiKey];
      // Node reads header bytes as Latin-1, as uvicorn and Starlette do before the engines compare
      // the header with the key as text: a key outside ASCII never matches, as with the real ones.
      if (!keys.some((k) => req.headers.authorization === `Bearer ${k}`))
        return send(res, 401, { error: "Unauthorized" });
    }
    if (url === "/version" && get) return send(res, 200, { version: plan.engineVersion || "unknown" });
    if (url === "/metrics" && get) {
      // DGPP: JSON counters (its docs/openai-compatibility.md); SGLang: no route without --enable-metrics.
      if (plan.engine === "dgpp") return send(res, 200, { scheduler: { active: running, queued: 0 } });
      if (!m) return send(res, 404, { detail: "Not Found" });
      res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
      return res.end(exporter ? exporter.text() : "");
    }
    if (url === "/v1/models") {
      if (!get) return send(res, 405, { detail: "Method Not Allowed" });
      const data = plan.served.map((id) => ({
        id,
        object: "model",
        created: Math.floor(Date.now() / 1000),
        owned_by: plan.ownedBy,
        root: plan.model,
        parent: null,
        max_model_len: plan.maxModelLen,
      }));
      return send(res, 200, { object: "list", data });
    }
    if (url === "/v1/chat/completions" || url === "/v1/completions") {
      if (req.method !== "POST") return send(res, 405, { detail: "Method Not Allowed" });
      // vLLM 0.32.0 draining: its engine client takes nothing new (an executor after shutdown).
      if (draining) {
        const message = "cannot schedule new futures after shutdown";
        return send(res, 500, { error: { message, type: "InternalServerError", param: null, code: 500 } });
      }
      let body;
      try {
        body = JSON.parse(raw || "null");
      } catch {
        return error(res, 400, "request body is not valid JSON", "BadRequestError");
      }
      if (!body || typeof body !== "object")
        return error(res, 400, "request body must be a JSON object", "BadRequestError");
      return complete(req, res, body, url === "/v1/chat/completions");
    }
    return send(res, 404, { detail: "Not Found" });
  }

  const server = http.createServer((req, res) => {
    const parts = [];
    req.on("data", (d) => parts.push(d));
    req.on("end", () => {
      res.on(
        "finish",
        () =>
          plan.onAccess &&
          plan.onAccess(`${req.socket.remoteAddress}:${req.socket.remotePort}`, req.method, req.url, res.statusCode),
      );
      Promise.resolve(route(req, res, Buffer.concat(parts).toString("utf8"))).catch((err) => {
        if (!res.headersSent) send(res, 500, { error: String(err) });
        else res.end();
      });
    });
  });
  /**
   * Refuses new requests from now on, and resolves after `seconds`: vLLM 0.32.0's engine finishes
   * what runs, then its process manager waits out the whole bound for the worker it stopped.
   */
  server.drain = async (seconds) => {
    draining = true;
    await new Promise((r) => setTimeout(r, seconds * 1000));
  };
  return server;
}

module.exports = { createServer };
