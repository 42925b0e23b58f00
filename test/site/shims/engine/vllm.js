"use strict";
// The vLLM command-line contract (`vllm serve MODEL ...` and
// `python3 -m vllm.entrypoints.openai.api_server --model M ...`): vLLM 0.33.0's
// own option table (src/engines/options), its parser's rewrites, and the checks
// its config validation makes at start, turned into a launch plan.
const fs = require("node:fs");
const { parseArgs, ArgError, loadTable } = require("./argparse");
const c = require("./common");

const TOOL_PARSERS = [
  "deepseek_v3",
  "deepseek_v31",
  "glm45",
  "granite",
  "hermes",
  "internlm",
  "jamba",
  "kimi_k2",
  "llama3_json",
  "llama4_json",
  "longcat",
  "minimax",
  "mistral",
  "openai",
  "pythonic",
  "qwen3_coder",
  "qwen3_xml",
  "seed_oss",
  "step3",
  "xlam",
];
const REASONING_PARSERS = [
  "deepseek_r1",
  "deepseek_v3",
  "ernie45",
  "glm45",
  "granite",
  "hunyuan_a13b",
  "minimax_m2",
  "mistral",
  "openai_gptoss",
  "qwen3",
  "seed_oss",
  "step3",
];

const TABLE = loadTable("vllm");

/**
 * FlexibleArgumentParser.parse_args's rewrites before argparse (vllm/utils/argparse_utils.py):
 * `vllm serve ... --model M` moves M to the front, `--a_b` reads as `--a-b` (up to "=" or "."),
 * `-O3` as `--optimization-level 3`, and `--opt.key value` is folded into `--opt <json>`.
 */
function flexible(argv, serve) {
  let args = [...argv];
  if (serve) {
    const i = args.findIndex((a) => /^--model(=.+|$)/.test(a));
    if (i >= 0) {
      const tag = args[i] === "--model" ? args[i + 1] : args[i].slice("--model=".length);
      args = [tag, ...args.slice(0, i), ...args.slice(args[i] === "--model" ? i + 2 : i + 1)];
    } else if (
      args.length > 0 &&
      args[0].startsWith("-") &&
      !args.some((a) => /^--config(=.+|$)/.test(a)) &&
      args.some((a) => /^--served[-_]model[-_]name(=.+|$)/.test(a))
    ) {
      throw new ValueErrorAtStart(
        "`model` should be provided as the first positional argument when using `vllm serve`. i.e. " +
          "`vllm serve <model> --<arg> <value>`.",
      );
    }
  }
  const out = [];
  const dotted = new Map();
  for (let i = 0; i < args.length; i++) {
    let a = args[i];
    if (a.startsWith("--")) {
      const eq = a.indexOf("=");
      const key = eq < 0 ? a : a.slice(0, eq);
      const dot = key.indexOf(".");
      const head = dot < 0 ? key : key.slice(0, dot);
      a = `--${head.slice(2).replace(/_/g, "-")}${key.slice(head.length)}${eq < 0 ? "" : a.slice(eq)}`;
    } else if (a.startsWith("-O") && a !== "-O") {
      out.push("--optimization-level", a[2] === "=" ? a.slice(3) : a.slice(2));
      continue;
    }
    const key = a.split("=")[0];
    if (a.startsWith("-") && key.includes(".")) {
      const value = a.includes("=") ? a.slice(a.indexOf("=") + 1) : args[++i];
      const [base, ...path] = key.split(".");
      let v;
      try {
        v = JSON.parse(value);
      } catch {
        v = value;
      }
      const obj = dotted.get(base) || {};
      let at = obj;
      path.slice(0, -1).forEach((k) => (at = at[k] = at[k] || {}));
      at[path[path.length - 1]] = v;
      dotted.set(base, obj);
      continue;
    }
    out.push(a);
  }
  for (const [k, v] of dotted) out.push(k, JSON.stringify(v));
  return out;
}

/** A ValueError that FlexibleArgumentParser raises before argparse runs. */
class ValueErrorAtStart extends Error {}

function plan(kind, argv) {
  const serve = kind === "serve";
  const prog = serve ? "vllm serve" : "api_server.py";
  const usage = serve ? "vllm serve [model_tag] [options]" : "api_server.py [-h] [--model MODEL] [options]";
  const where = serve
    ? "/usr/local/bin/vllm"
    : "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py";
  if (argv.includes("-h") || argv.includes("--help")) throw new c.EngineExit(0, `usage: ${usage}\n`);
  const fail = (type, msg) => c.pyExit(where, type, msg);
  let a;
  try {
    a = parseArgs(TABLE, flexible(argv, serve)).values;
  } catch (err) {
    if (err instanceof ArgError) throw c.argparseExit(prog, usage, err.message);
    if (err instanceof ValueErrorAtStart) throw fail("ValueError", err.message);
    throw err;
  }
  // `vllm serve` takes the positional model; the old module reads --model and ignores it.
  const model = serve ? a.model_tag : a.model;
  if (model === undefined || model === null)
    throw fail("ValueError", "no model given (test site: vLLM's default model is not simulated)");
  const tp = a.tensor_parallel_size !== undefined ? a.tensor_parallel_size : 1;
  const pp = a.pipeline_parallel_size !== undefined ? a.pipeline_parallel_size : 1;
  const nnodes = a.nnodes !== undefined ? a.nnodes : 1;
  const rank = a.node_rank !== undefined ? a.node_rank : 0;
  if (tp < 1 || pp < 1 || nnodes < 1)
    throw fail("ValueError", "tensor_parallel_size, pipeline_parallel_size and nnodes must be >= 1");
  if (a.data_parallel_size !== undefined && a.data_parallel_size > 1)
    throw fail("NotImplementedError", "test site: data parallelism (--data-parallel-size > 1) is not simulated");
  // The old module (vllm/entrypoints/launchers/api_server/entry.py) parses --headless and then
  // runs the API server anyway: only `vllm serve` honours it.
  const headless = serve && a.headless === true;
  if (headless && a.api_server_count !== undefined && a.api_server_count !== null && a.api_server_count > 0) {
    throw fail(
      "ValueError",
      `--api-server-count=${a.api_server_count} cannot be used with --headless (no API servers are ` +
        `started in headless mode).`,
    );
  }
  const util = a.gpu_memory_utilization !== undefined ? a.gpu_memory_utilization : 0.9;
  if (!(util > 0 && util <= 1)) throw fail("ValueError", `GPU memory utilization must be within (0, 1]. Got ${util}.`);
  if (a.max_model_len !== undefined && a.max_model_len !== null && a.max_model_len <= 0)
    throw fail("ValueError", `max_model_len must be positive, got ${a.max_model_len}`);
  if (nnodes > 1) {
    const missing = ["master_addr"].filter((k) => a[k] === undefined || a[k] === null);
    if (missing.length > 0)
      throw fail(
        "ValueError",
        `--nnodes ${nnodes} requires ${missing.map((k) => `--${k.replace(/_/g, "-")}`).join(", ")} (test site: ` +
          `the default 127.0.0.1 master is not simulated)`,
      );
    if (a.distributed_executor_backend === "ray")
      throw fail(
        "RuntimeError",
        "Ray cluster not found (the test site simulates multi-node vLLM with the mp backend only)",
      );
  }
  if (rank < 0 || rank >= nnodes) throw fail("ValueError", `node_rank (${rank}) must be in [0, nnodes=${nnodes})`);
  if (tp % nnodes !== 0)
    throw fail("ValueError", `tensor_parallel_size (${tp}) must be divisible by nnodes (${nnodes})`);
  if ((tp * pp) / nnodes > 1) {
    throw fail(
      "ValueError",
      `World size (${tp * pp}) is larger than the number of available GPUs (${nnodes}) in this node. ` +
        "If this is intentional and you are using: - ray, set '--distributed-executor-backend ray'. " +
        "- multiprocessing, set '--nnodes' and '--node-rank'.",
    );
  }
  // Beyond the parser: a rank above 0 that is not headless starts its own API server and engine
  // core instead of joining rank 0's (vLLM's multi-node docs run the workers with --headless).
  if (rank > 0 && !headless) {
    throw fail(
      "RuntimeError",
      `node rank ${rank} > 0 started an API server of its own instead of a headless worker` +
        (serve
          ? " (run it with --headless)"
          : ": python3 -m vllm.entrypoints.openai.api_server ignores --headless; run `vllm serve ... --headless`"),
    );
  }
  const masterPort = a.master_port !== undefined ? a.master_port : 29501;
  if (nnodes > 1) {
    // vLLM binds its collectives to VLLM_HOST_IP (vllm/envs.py); unset, it guesses an interface.
    const hostIp = process.env.VLLM_HOST_IP;
    if (hostIp !== c.nodeIp()) {
      throw fail(
        "ValueError",
        `VLLM_HOST_IP=${hostIp === undefined ? "(unset)" : hostIp} is not this node's address (${c.nodeIp()}); ` +
          `NCCL/Gloo would bind the wrong interface`,
      );
    }
    if (rank === 0 && a.master_addr !== c.nodeIp()) {
      throw fail(
        "OSError",
        `[Errno 99] Cannot assign requested address: the master (rank 0) cannot listen on ` +
          `--master-addr ${a.master_addr}`,
      );
    }
  }
  if (a.enable_auto_tool_choice && !a.tool_call_parser)
    throw fail("TypeError", "Error: --enable-auto-tool-choice requires --tool-call-parser");
  if (a.tool_call_parser && !TOOL_PARSERS.includes(a.tool_call_parser)) {
    throw fail(
      "KeyError",
      `'invalid tool call parser: ${a.tool_call_parser} (chose from { ${TOOL_PARSERS.join(",")} })'`,
    );
  }
  if (a.reasoning_parser && !REASONING_PARSERS.includes(a.reasoning_parser)) {
    throw fail(
      "KeyError",
      `'invalid reasoning parser: ${a.reasoning_parser} (chose from { ${REASONING_PARSERS.join(",")} })'`,
    );
  }
  if (a.speculative_config !== undefined && a.speculative_config !== null) {
    // Its type (an optional JSON) is not one the fake parser converts: read the JSON here.
    let s;
    try {
      s = typeof a.speculative_config === "string" ? JSON.parse(a.speculative_config) : a.speculative_config;
    } catch (err) {
      throw fail("json.decoder.JSONDecodeError", `--speculative-config: ${err.message}`);
    }
    if (!s || typeof s !== "object" || Array.isArray(s) || (s.method === undefined && s.model === undefined)) {
      throw fail("ValueError", "speculative_config must be a JSON object with 'method' or 'model'");
    }
  }
  if (a.chat_template !== undefined && (a.chat_template.includes("/") || /\.jinja$/.test(a.chat_template))) {
    if (!fs.existsSync(a.chat_template)) {
      throw fail(
        "ValueError",
        `The supplied chat template (${a.chat_template}) looks like a file path, but it failed to be opened. Reason: ` +
          `[Errno 2] No such file or directory: '${a.chat_template}'`,
      );
    }
  }
  c.checkModel(where, model);
  const port = a.port !== undefined ? a.port : 8000;
  const listen = headless ? null : { addr: c.bindAddress(where, a.host, port), port, shown: a.host || "0.0.0.0" };
  // vLLM's --api-key, else VLLM_API_KEY (vllm/envs.py).
  const apiKey = a.api_key !== undefined && a.api_key !== null ? a.api_key : process.env.VLLM_API_KEY || null;
  const served = a.served_model_name || [model];
  const maxLen = a.max_model_len !== undefined ? a.max_model_len : 131072;
  const hello = { engine: "vllm", model, nnodes, tp, pp };
  return {
    engine: "vllm",
    engineVersion: TABLE.version,
    model,
    where,
    served,
    ownedBy: "vllm",
    maxModelLen: maxLen,
    apiKey,
    listen,
    // --shutdown-timeout (vLLM 0.20 on): on SIGTERM, finish what runs for up to that long.
    shutdownTimeoutS: a.shutdown_timeout || 0,
    healthOnly: false,
    rendezvous:
      nnodes === 1
        ? null
        : {
            role: rank === 0 ? "head" : "worker",
            addr: a.master_addr,
            port: masterPort,
            expect: nnodes - 1,
            rank,
            hello,
          },
    // /metrics is always mounted; --disable-log-stats leaves the engine's series out. The running
    // limit is --max-num-seqs, else 256 (GB10's default, vllm/engine/arg_utils.py).
    metrics: {
      on: a.disable_log_stats !== true,
      maxRunning: a.max_num_seqs || 256,
      kvTokens: (b) => c.kvTokens(b, util, /^fp8/.test(a.kv_cache_dtype || ""), tp * pp),
    },
    log: vllmLog(model, served[0], maxLen, util, a.kv_cache_dtype, tp * pp, headless, listen),
  };
}

function vllmLog(model, served, maxLen, util, kvDtype, world, headless, listen) {
  const pid = process.pid;
  const info = (file, msg) => ["out", `INFO ${c.vllmTime()} [${file}] ${msg}`];
  const uv = (msg) => ["err", `INFO:     ${msg}`];
  return {
    start: () => [
      info("__init__.py:216", "Automatically detected platform cuda."),
      info("api_server.py:1839", `vLLM API server version ${TABLE.version}`),
      info(
        "utils.py:233",
        `non-default args: {'model': '${model}', 'served_model_name': ['${served}'], 'max_model_len': ${maxLen}}`,
      ),
      info("model.py:1510", `Using max model len ${maxLen}`),
    ],
    waiting: (n, where) => [info("parallel_state.py:1208", `Waiting for ${n} worker node(s) to join at ${where}`)],
    joined: (rank, ip) => [info("parallel_state.py:1214", `Worker node rank ${rank} (${ip}) joined`)],
    load: (b, proofs) => {
      const tokens = c.kvTokens(b, util, /^fp8/.test(kvDtype || ""), world);
      return [
        info("gpu_model_runner.py:2602", `Starting to load model ${model}...`),
        ...proofs.map((p) => info("gpu_model_runner.py:2610", p)),
        info("default_loader.py:267", "Loading weights took 12.34 seconds"),
        info("gpu_model_runner.py:2653", "Model loading took 15.2 GiB and 13.10 seconds"),
        info("gpu_worker.py:298", `Available KV cache memory: ${(util * 100).toFixed(2)} GiB`),
        // One line, as vLLM 0.32.0 prints it (kv_cache_utils.py: the device, then the concurrency).
        info(
          "kv_cache_utils.py:2327",
          `GPU KV cache size: ${c.commas(tokens)} tokens, ` +
            `Maximum concurrency for ${c.commas(maxLen)} tokens per request: ${(tokens / maxLen).toFixed(2)}x`,
        ),
        info("core.py:210", "init engine (profile, create kv cache, warmup model) took 40.00 seconds"),
      ];
    },
    ready: () =>
      headless
        ? [info("core.py:740", "Headless worker ready; serving no API on this node")]
        : [
            // What vLLM 0.32.0 prints as it serves (its own launcher runs uvicorn: no "Uvicorn running").
            info("entry.py:140", `Starting vLLM server on http://${listen.shown}:${listen.port}`),
            uv(`Started server process [${pid}]`),
            uv("Waiting for application startup."),
            uv("Application startup complete."),
          ],
    access: (peer, method, url, status) => ["out", `INFO:     ${peer} - "${method} ${url} HTTP/1.1" ${status}`],
    // vLLM 0.32.0's last lines on SIGTERM or SIGINT (no "Finished server process": its launcher
    // stops uvicorn's server itself).
    shutdown: () => [
      uv("Shutting down"),
      uv("Waiting for application shutdown."),
      uv("Application shutdown complete."),
    ],
    crash: (why) => [
      "err",
      `ERROR ${c.vllmTime()} [core.py:710] EngineCore encountered a fatal error.\nRuntimeError: ${why}`,
    ],
  };
}

module.exports = { plan, version: TABLE.version };
