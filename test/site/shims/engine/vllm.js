"use strict";
// The vLLM command-line contract (`vllm serve MODEL ...` and
// `python3 -m vllm.entrypoints.openai.api_server --model M ...`), checked as
// strictly as vLLM's argparse and config validation, turned into a launch plan.
const fs = require("node:fs");
const { parseArgs, ArgError, flags } = require("./argparse");
const c = require("./common");

const QUANT = "aqlm,awq,awq_marlin,bitsandbytes,compressed-tensors,experts_int8,fbgemm_fp8,fp8,gguf,gptq,gptq_marlin,hqq,inc,marlin,modelopt,modelopt_fp4,moe_wna16,mxfp4,ptpc_fp8,quark,rtn,torchao";
const TOOL_PARSERS = ["deepseek_v3", "deepseek_v31", "glm45", "granite", "hermes", "internlm", "jamba", "kimi_k2", "llama3_json", "llama4_json", "longcat", "minimax", "mistral", "openai", "pythonic", "qwen3_coder", "qwen3_xml", "seed_oss", "step3", "xlam"];
const REASONING_PARSERS = ["deepseek_r1", "deepseek_v3", "ernie45", "glm45", "granite", "hunyuan_a13b", "minimax_m2", "mistral", "openai_gptoss", "qwen3", "seed_oss", "step3"];

const FLAGS = flags([
  "--model", "--served-model-name", "--host", "--port int", "--tensor-parallel-size|-tp int",
  "--pipeline-parallel-size|-pp int", "--max-model-len int", "--gpu-memory-utilization float", "--max-num-seqs int",
  "--kv-cache-dtype str:auto,bfloat16,fp8,fp8_e4m3,fp8_e5m2,fp8_inc", `--quantization|-q str:${QUANT}`,
  "--dtype str:auto,bfloat16,float,float16,float32,half", "--trust-remote-code bool!", "--enable-prefix-caching bool!",
  "--enable-chunked-prefill bool!", "--enforce-eager bool",
  "--load-format str:auto,bitsandbytes,dummy,fastsafetensors,gguf,mistral,npcache,pt,runai_streamer,safetensors,sharded_state,tensorizer",
  "--download-dir", "--chat-template", "--speculative-config json", "--compilation-config|-O jsonOrInt", "--api-key",
  "--distributed-executor-backend str:mp,ray", "--nnodes|-n int", "--node-rank|-r int", "--master-addr", "--master-port int",
  "--headless bool", "--enable-auto-tool-choice bool", "--tool-call-parser", "--reasoning-parser",
  "--max-num-batched-tokens int", "--swap-space float", "--seed int",
]);
FLAGS.find((f) => f.dest === "served_model_name").nargs = "+";

function plan(kind, argv) {
  const serve = kind === "serve";
  const prog = serve ? "vllm serve" : "api_server.py";
  const usage = serve ? "vllm serve [model_tag] [options]" : "api_server.py [-h] [--model MODEL] [options]";
  const where = serve ? "/usr/local/bin/vllm" : "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/openai/api_server.py";
  if (argv.includes("-h") || argv.includes("--help")) throw new c.EngineExit(0, `usage: ${usage}\n`);
  const spec = { flags: FLAGS, underscores: true, positionals: serve ? [{ dest: "model_tag", required: true }] : [] };
  let parsed;
  try {
    parsed = parseArgs(spec, argv);
  } catch (err) {
    if (err instanceof ArgError) throw c.argparseExit(prog, usage, err.message);
    throw err;
  }
  const a = parsed.values;
  const fail = (type, msg) => c.pyExit(where, type, msg);
  if (serve && a.model !== undefined) {
    throw fail("ValueError", "With `vllm serve`, you should provide the model as a positional argument or in a config file instead of via the `--model` option.");
  }
  if (!serve && a.model === undefined) throw c.argparseExit(prog, usage, "the following arguments are required: --model (test site: the default model is not simulated)");
  const model = serve ? a.model_tag : a.model;
  const tp = a.tensor_parallel_size !== undefined ? a.tensor_parallel_size : 1;
  const pp = a.pipeline_parallel_size !== undefined ? a.pipeline_parallel_size : 1;
  const nnodes = a.nnodes !== undefined ? a.nnodes : 1;
  const rank = a.node_rank !== undefined ? a.node_rank : 0;
  if (tp < 1 || pp < 1 || nnodes < 1) throw fail("ValueError", "tensor_parallel_size, pipeline_parallel_size and nnodes must be >= 1");
  const util = a.gpu_memory_utilization !== undefined ? a.gpu_memory_utilization : 0.9;
  if (!(util > 0 && util <= 1)) throw fail("ValueError", `GPU memory utilization must be within (0, 1]. Got ${util}.`);
  if (a.max_model_len !== undefined && a.max_model_len <= 0) throw fail("ValueError", `max_model_len must be positive, got ${a.max_model_len}`);
  if (nnodes > 1) {
    const missing = ["node_rank", "master_addr", "master_port"].filter((k) => a[k] === undefined);
    if (missing.length > 0) throw fail("ValueError", `--nnodes ${nnodes} requires ${missing.map((k) => `--${k.replace(/_/g, "-")}`).join(", ")}`);
    if (a.distributed_executor_backend === "ray") throw fail("RuntimeError", "Ray cluster not found (the test site simulates multi-node vLLM with the mp backend only)");
  }
  if (rank < 0 || rank >= nnodes) throw fail("ValueError", `node_rank (${rank}) must be in [0, nnodes=${nnodes})`);
  if (tp % nnodes !== 0) throw fail("ValueError", `tensor_parallel_size (${tp}) must be divisible by nnodes (${nnodes})`);
  if ((tp * pp) / nnodes > 1) {
    throw fail("ValueError", `World size (${tp * pp}) is larger than the number of available GPUs (${nnodes}) in this node. If this is intentional and you are using: - ray, set '--distributed-executor-backend ray'. - multiprocessing, set '--nnodes' and '--node-rank'.`);
  }
  if (a.headless && rank === 0) throw fail("ValueError", "--headless requires --node-rank > 0 (rank 0 serves the API)");
  if (rank > 0 && !a.headless) throw fail("ValueError", `node rank ${rank} > 0 must run with --headless`);
  if (a.headless && (a.host !== undefined || a.port !== undefined)) throw fail("ValueError", "--headless serves no API; --host/--port are not allowed with it");
  if (nnodes > 1) {
    const hostIp = process.env.VLLM_HOST_IP;
    if (hostIp !== c.nodeIp()) {
      throw fail("ValueError", `VLLM_HOST_IP=${hostIp === undefined ? "(unset)" : hostIp} is not this node's address (${c.nodeIp()}); NCCL/Gloo would bind the wrong interface`);
    }
    if (rank === 0 && a.master_addr !== c.nodeIp()) {
      throw fail("OSError", `[Errno 99] Cannot assign requested address: the master (rank 0) cannot listen on --master-addr ${a.master_addr}`);
    }
  }
  if (a.enable_auto_tool_choice && !a.tool_call_parser) throw fail("TypeError", "Error: --enable-auto-tool-choice requires --tool-call-parser");
  if (a.tool_call_parser && !TOOL_PARSERS.includes(a.tool_call_parser)) {
    throw fail("KeyError", `'invalid tool call parser: ${a.tool_call_parser} (chose from { ${TOOL_PARSERS.join(",")} })'`);
  }
  if (a.reasoning_parser && !REASONING_PARSERS.includes(a.reasoning_parser)) {
    throw fail("KeyError", `'invalid reasoning parser: ${a.reasoning_parser} (chose from { ${REASONING_PARSERS.join(",")} })'`);
  }
  if (a.speculative_config !== undefined) {
    const s = a.speculative_config;
    if (!s || typeof s !== "object" || Array.isArray(s) || (s.method === undefined && s.model === undefined)) {
      throw fail("ValueError", "speculative_config must be a JSON object with 'method' or 'model'");
    }
  }
  if (a.chat_template !== undefined && (a.chat_template.includes("/") || /\.jinja$/.test(a.chat_template))) {
    if (!fs.existsSync(c.hostPath(a.chat_template))) {
      throw fail("ValueError", `The supplied chat template (${a.chat_template}) looks like a file path, but it failed to be opened. Reason: [Errno 2] No such file or directory: '${a.chat_template}'`);
    }
  }
  c.checkModel(where, model);
  const port = a.port !== undefined ? a.port : 8000;
  const listen = a.headless ? null : { addr: c.bindAddress(where, a.host, port), port, shown: a.host || "0.0.0.0" };
  const apiKey = a.api_key !== undefined ? a.api_key : process.env.VLLM_API_KEY || null;
  const served = a.served_model_name || [model];
  const maxLen = a.max_model_len !== undefined ? a.max_model_len : 131072;
  const hello = { engine: "vllm", model, nnodes, tp, pp };
  return {
    engine: "vllm",
    model,
    where,
    served,
    ownedBy: "vllm",
    maxModelLen: maxLen,
    apiKey,
    listen,
    healthOnly: false,
    rendezvous: nnodes === 1 ? null : { role: rank === 0 ? "head" : "worker", addr: a.master_addr, port: a.master_port, expect: nnodes - 1, rank, hello },
    log: vllmLog(model, served[0], maxLen, util, a.kv_cache_dtype, tp * pp, Boolean(a.headless), listen),
  };
}

function vllmLog(model, served, maxLen, util, kvDtype, world, headless, listen) {
  const pid = process.pid;
  const info = (file, msg) => ["out", `INFO ${c.vllmTime()} [${file}] ${msg}`];
  const uv = (msg) => ["err", `INFO:     ${msg}`];
  return {
    start: () => [
      info("__init__.py:216", "Automatically detected platform cuda."),
      info("api_server.py:1839", "vLLM API server version 0.11.1"),
      info("utils.py:233", `non-default args: {'model': '${model}', 'served_model_name': ['${served}'], 'max_model_len': ${maxLen}}`),
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
        info("kv_cache_utils.py:1087", `GPU KV cache size: ${c.commas(tokens)} tokens`),
        info("kv_cache_utils.py:1091", `Maximum concurrency for ${c.commas(maxLen)} tokens per request: ${(tokens / maxLen).toFixed(2)}x`),
        info("core.py:210", "init engine (profile, create kv cache, warmup model) took 40.00 seconds"),
      ];
    },
    ready: () =>
      headless
        ? [info("core.py:740", "Headless worker ready; serving no API on this node")]
        : [
            info("api_server.py:1912", `Starting vLLM API server 0 on http://${listen.shown}:${listen.port}`),
            uv(`Started server process [${pid}]`),
            uv("Waiting for application startup."),
            uv("Application startup complete."),
            uv(`Uvicorn running on http://${listen.shown}:${listen.port} (Press CTRL+C to quit)`),
          ],
    access: (peer, method, url, status) => ["out", `INFO:     ${peer} - "${method} ${url} HTTP/1.1" ${status}`],
    shutdown: () => [uv("Shutting down"), uv("Finished server process [" + pid + "]")],
    crash: (why) => ["err", `ERROR ${c.vllmTime()} [core.py:710] EngineCore encountered a fatal error.\nRuntimeError: ${why}`],
  };
}

module.exports = { plan };
