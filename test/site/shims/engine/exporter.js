"use strict";
// The fake engines' Prometheus metrics: the real families of vLLM (0.33.0, or the
// version SM121_SIM_VLLM_VERSION names) and SGLang 0.5.23 (names, types, help,
// label names, buckets and sample names, as scripts/engine-options/metrics.py read
// them from the installed packages into
// src/engines/metrics/), with values that follow what this server does: the
// requests it runs and queues (admission up to the engine's running limit and
// its KV cache), the tokens it reads and writes, and when each token went out.
// gr8 is served as vLLM (kindlingai's GLM-5.3 stack is vLLM); DGPP answers JSON.
const fs = require("node:fs");
const path = require("node:path");
const { versionedFile } = require("./argparse");

const DATA_DIRS = [
  path.join(__dirname, "metrics"),
  path.resolve(__dirname, "..", "..", "..", "..", "src", "engines", "metrics"),
];

/**
 * Each engine's exporter: its definitions file, what its own families mean (the engine's side of
 * sm121's MetricSeries), and the finish reasons whose series it makes at start. vLLM makes each
 * engine's series at start (create_metric_per_engine), request_success one per FinishReason
 * (vllm/v1/engine/__init__.py); SGLang makes its own at first use.
 */
const VLLM = {
  data: "vllm",
  families: {
    running: "vllm:num_requests_running",
    waiting: "vllm:num_requests_waiting",
    kvUsage: "vllm:kv_cache_usage_perc",
    promptTokens: "vllm:prompt_tokens",
    generationTokens: "vllm:generation_tokens",
    finished: "vllm:request_success",
    ttft: "vllm:time_to_first_token_seconds",
    itl: "vllm:inter_token_latency_seconds",
    e2e: "vllm:e2e_request_latency_seconds",
  },
  eager: ["stop", "length", "abort", "error", "repetition"],
};
const SGLANG = {
  data: "sglang",
  families: {
    running: "sglang:num_running_reqs",
    waiting: "sglang:num_queue_reqs",
    kvUsage: "sglang:token_usage",
    promptTokens: "sglang:prompt_tokens",
    generationTokens: "sglang:generation_tokens",
    finished: "sglang:num_requests",
    ttft: "sglang:time_to_first_token_seconds",
    itl: "sglang:inter_token_latency_seconds",
    e2e: "sglang:e2e_request_latency_seconds",
  },
  eager: null,
};
const EXPORTERS = { vllm: VLLM, sglang: SGLANG, gr8: VLLM };

function loadData(engine) {
  const file = versionedFile(DATA_DIRS, engine);
  if (file) return JSON.parse(fs.readFileSync(file, "utf8"));
  throw new Error(`fake-engine: no metric definitions for ${engine} in ${DATA_DIRS.join(" or ")}`);
}

/** Python's repr of a float, as prometheus_client prints values and bucket bounds. */
function pyFloat(v) {
  if (v === Infinity) return "+Inf";
  return Number.isInteger(v) && Math.abs(v) < 1e16 ? v.toFixed(1) : String(v);
}

const labelValue = (v) => String(v).replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, '\\"');

class Family {
  constructor(def, labelValues, shown) {
    this.def = def;
    this.base = labelValues;
    // fake-engine.json metricValues: the value's text of a series, whatever it counts.
    this.shown = shown;
    this.children = new Map();
    this.created = Date.now() / 1000;
  }

  child(extra) {
    const values = { ...this.base, ...(extra || {}) };
    for (const l of this.def.labels)
      if (!(l in values)) throw new Error(`fake-engine: no value for label ${l} of ${this.def.name}`);
    const key = this.def.labels.map((l) => values[l]).join("\u0000");
    let c = this.children.get(key);
    if (c === undefined) {
      c = {
        labels: this.def.labels.map((l) => `${l}="${labelValue(values[l])}"`),
        value: 0,
        buckets: (this.def.buckets || []).map(() => 0),
        sum: 0,
        count: 0,
      };
      this.children.set(key, c);
    }
    return c;
  }

  observe(v, extra) {
    const c = this.child(extra);
    this.def.buckets.forEach((b, i) => {
      if (v <= (b === "+Inf" ? Infinity : b)) c.buckets[i] += 1;
    });
    c.sum += v;
    c.count += 1;
  }

  text() {
    const d = this.def;
    const has = (s) => d.samples.includes(s);
    const out = [];
    const value = (name, v) => (Object.hasOwn(this.shown, name) ? this.shown[name] : pyFloat(v));
    const series = (name, labels, v) => `${name}${labels.length > 0 ? `{${labels.join(",")}}` : ""} ${value(name, v)}`;
    const total = d.type === "counter" ? `${d.name}_total` : d.name;
    out.push(`# HELP ${total} ${d.help}`, `# TYPE ${total} ${d.type}`);
    for (const c of this.children.values()) {
      if (d.type === "histogram") {
        d.buckets.forEach((b, i) =>
          out.push(
            series(`${d.name}_bucket`, [...c.labels, `le="${b === "+Inf" ? "+Inf" : pyFloat(b)}"`], c.buckets[i]),
          ),
        );
        out.push(series(`${d.name}_count`, c.labels, c.count), series(`${d.name}_sum`, c.labels, c.sum));
      } else out.push(series(total, c.labels, c.value));
    }
    if (has(`${d.name}_created`)) {
      out.push(`# HELP ${d.name}_created ${d.help}`, `# TYPE ${d.name}_created gauge`);
      for (const c of this.children.values()) out.push(series(`${d.name}_created`, c.labels, this.created));
    }
    return out.join("\n");
  }
}

/**
 * The metrics of one fake engine. `limits`: how many requests run at once (the engine's
 * --max-num-seqs / --max-running-requests) and how many tokens its KV cache holds. `shown`:
 * fake-engine.json's metricValues, the text some series print as their value.
 */
function createExporter(plan, limits, shown = {}) {
  const exp = EXPORTERS[plan.engine];
  if (exp === undefined) return null;
  const data = loadData(exp.data);
  const labels = {
    model_name: plan.served[0],
    engine: "0",
    engine_type: "unified",
    tp_rank: "0",
    pp_rank: "0",
    moe_ep_rank: "0",
  };
  const fam = {};
  for (const [role, name] of Object.entries(exp.families)) {
    const def = data.metrics.find((m) => m.name === name);
    if (def === undefined) throw new Error(`fake-engine: ${data.engine} ${data.version} has no metric ${name}`);
    fam[role] = new Family(def, labels, shown);
  }
  const running = new Set();
  const queue = [];
  let kvUsed = 0;
  // Gauges the engine sets from its first scheduler step on.
  const gauges = () => {
    fam.running.child().value = running.size;
    fam.waiting.child().value = queue.length;
    fam.kvUsage.child().value = limits.kvTokens > 0 ? Math.min(1, kvUsed / limits.kvTokens) : 0;
  };
  gauges();
  // The other families: vLLM makes every one at start, and a table that records which series
  // (`atStart`, scripts/engine-options/metrics.py) gives them here, at zero (an info gauge at 1).
  const others = [];
  if (exp.eager !== null && data.metrics.every((d) => d.atStart !== undefined)) {
    const roles = new Set(Object.values(exp.families));
    for (const def of data.metrics.filter((d) => !roles.has(d.name))) {
      const f = new Family(def, labels, shown);
      for (const extra of def.atStart) f.child(extra).value = def.name.endsWith("_info") ? 1 : 0;
      others.push(f);
    }
    for (const f of Object.values(fam)) for (const extra of f.def.atStart) f.child(extra);
  } else if (exp.eager !== null) {
    for (const [role, f] of Object.entries(fam)) {
      if (role === "finished") for (const reason of exp.eager) f.child({ finished_reason: reason });
      else f.child();
    }
  }
  const fits = (r) =>
    running.size === 0 || (running.size < limits.maxRunning && kvUsed + r.held + r.prompt <= limits.kvTokens);
  const admit = () => {
    while (queue.length > 0 && fits(queue[0])) {
      const r = queue.shift();
      running.add(r);
      r.held = r.prompt;
      kvUsed += r.held;
      r.go();
    }
    gauges();
  };

  /** One request: resolves `admitted` once it runs; token() per generated token; end() once. */
  function begin(promptTokens, stream) {
    const streaming = { is_streaming: stream ? "true" : "false" };
    const r = { prompt: promptTokens, held: 0, arrived: Date.now(), last: 0, tokens: 0 };
    r.admitted = new Promise((resolve) => (r.go = resolve));
    queue.push(r);
    admit();
    r.token = () => {
      const now = Date.now();
      if (r.tokens === 0) {
        fam.ttft.observe((now - r.arrived) / 1000, streaming);
        fam.promptTokens.child(streaming).value += r.prompt;
      } else fam.itl.observe((now - r.last) / 1000);
      r.last = now;
      r.tokens += 1;
      r.held += 1;
      kvUsed += 1;
      fam.generationTokens.child(streaming).value += 1;
      gauges();
    };
    r.end = (reason) => {
      const waited = queue.indexOf(r);
      if (waited >= 0) queue.splice(waited, 1);
      if (!running.delete(r)) return gauges();
      kvUsed -= r.held;
      fam.e2e.observe((Date.now() - r.arrived) / 1000, streaming);
      fam.finished.child({ ...streaming, finished_reason: reason }).value += 1;
      admit();
    };
    return r;
  }

  const text = () => `${[...Object.values(fam), ...others].map((f) => f.text()).join("\n")}\n`;
  return { begin, text };
}

module.exports = { createExporter };
