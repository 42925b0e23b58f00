"use strict";
// The SGLang contract: `python3 -m sglang.launch_server --model-path M ...`.
// Every rank serves HTTP on --host/--port; only rank 0 answers the API, the
// others answer /health. Multi-node ranks meet at --dist-init-addr.
const fs = require("node:fs");
const { parseArgs, ArgError, flags } = require("./argparse");
const c = require("./common");

const ATTENTION = "aiter,ascend,cutlass_mla,fa3,fa4,flashinfer,flashmla,intel_amx,torch_native,triton,trtllm_mha,trtllm_mla,wave";
const QUANT = "awq,awq_marlin,bitsandbytes,compressed-tensors,fp8,gguf,gptq,gptq_marlin,modelopt,modelopt_fp4,mxfp4,petit_nvfp4,qoq,w4afp8,w8a8_fp8,w8a8_int8";
const FLAGS = flags([
  "--model-path|--model", "--served-model-name", "--host", "--port int", "--tp|--tp-size int", "--nnodes int",
  "--node-rank int", "--dist-init-addr", "--context-length int", "--mem-fraction-static float", "--trust-remote-code bool",
  "--api-key", "--chat-template", `--attention-backend str:${ATTENTION}`,
  "--kv-cache-dtype str:auto,bf16,bfloat16,fp4_e2m1,fp8_e4m3,fp8_e5m2", `--quantization str:${QUANT}`,
  "--disable-cuda-graph bool", "--enable-torch-compile bool", "--max-running-requests int",
  "--speculative-algorithm str:EAGLE,EAGLE3,NEXTN,NGRAM,STANDALONE", "--speculative-num-steps int",
  "--speculative-eagle-topk int", "--speculative-num-draft-tokens int",
]);
FLAGS.find((f) => f.dest === "model_path").required = true;

const PROG = "launch_server.py";
const USAGE = "launch_server.py [-h] --model-path MODEL_PATH [options]";
const WHERE = "/sgl-workspace/sglang/python/sglang/launch_server.py";

function plan(argv) {
  if (argv.includes("-h") || argv.includes("--help")) throw new c.EngineExit(0, `usage: ${USAGE}\n`);
  let a;
  try {
    a = parseArgs({ flags: FLAGS }, argv).values;
  } catch (err) {
    if (err instanceof ArgError) throw c.argparseExit(PROG, USAGE, err.message);
    throw err;
  }
  const fail = (type, msg) => c.pyExit(WHERE, type, msg);
  const tp = a.tp !== undefined ? a.tp : 1;
  const nnodes = a.nnodes !== undefined ? a.nnodes : 1;
  const rank = a.node_rank !== undefined ? a.node_rank : 0;
  if (tp < 1 || nnodes < 1) throw fail("ValueError", "tp_size and nnodes must be >= 1");
  if (tp % nnodes !== 0) throw fail("AssertionError", `tp_size (${tp}) must be divisible by nnodes (${nnodes})`);
  if (tp / nnodes > 1) throw fail("RuntimeError", `CUDA error: invalid device ordinal (tp_size ${tp} over ${nnodes} node(s) needs ${tp / nnodes} GPUs per node; a DGX Spark has 1)`);
  const mem = a.mem_fraction_static !== undefined ? a.mem_fraction_static : 0.88;
  if (!(mem > 0 && mem < 1)) throw fail("ValueError", `mem_fraction_static must be in (0, 1), got ${mem}`);
  if (rank < 0 || rank >= nnodes) throw fail("AssertionError", `node_rank (${rank}) must be in [0, nnodes=${nnodes})`);
  let dist = null;
  if (nnodes > 1) {
    if (a.dist_init_addr === undefined) throw fail("ValueError", "--dist-init-addr is required when --nnodes > 1");
    if (a.node_rank === undefined) throw fail("ValueError", "--node-rank is required when --nnodes > 1 (test site: no default rank)");
    const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(a.dist_init_addr);
    if (!m) throw fail("ValueError", `--dist-init-addr must be IP:PORT, got '${a.dist_init_addr}'`);
    dist = { addr: m[1], port: Number(m[2]) };
    const workerIp = process.env.SGLANG_WORKER_IP;
    if (workerIp !== c.nodeIp()) {
      throw fail("ValueError", `SGLANG_WORKER_IP=${workerIp === undefined ? "(unset)" : workerIp} is not this node's address (${c.nodeIp()})`);
    }
    if (rank === 0 && dist.addr !== c.nodeIp()) throw fail("OSError", `[Errno 99] Cannot assign requested address: rank 0 cannot listen on --dist-init-addr ${a.dist_init_addr}`);
  }
  if (a.chat_template !== undefined && a.chat_template.includes("/") && !fs.existsSync(c.hostPath(a.chat_template))) {
    throw fail("FileNotFoundError", `[Errno 2] No such file or directory: '${a.chat_template}'`);
  }
  c.checkModel(WHERE, a.model_path);
  const port = a.port !== undefined ? a.port : 30000;
  const host = a.host !== undefined ? a.host : "127.0.0.1";
  const listen = { addr: c.bindAddress(WHERE, host, port), port, shown: host };
  const served = [a.served_model_name || a.model_path];
  const maxLen = a.context_length !== undefined ? a.context_length : 131072;
  return {
    engine: "sglang",
    model: a.model_path,
    where: WHERE,
    served,
    ownedBy: "sglang",
    maxModelLen: maxLen,
    apiKey: a.api_key !== undefined ? a.api_key : null,
    listen,
    healthOnly: rank > 0,
    rendezvous: dist ? { role: rank === 0 ? "head" : "worker", addr: dist.addr, port: dist.port, expect: nnodes - 1, rank, hello: { engine: "sglang", model: a.model_path, nnodes, tp } } : null,
    log: sglangLog(a.model_path, maxLen, mem, a.kv_cache_dtype, tp, rank, listen),
  };
}

function sglangLog(model, maxLen, mem, kvDtype, tp, rank, listen) {
  const line = (msg) => ["out", `[${c.sglTime()}] ${msg}`];
  const tpLine = (msg) => ["out", `[${c.sglTime()} TP${rank}] ${msg}`];
  const uv = (msg) => ["err", `[${c.sglTime()}] INFO:     ${msg}`];
  return {
    start: () => [line(`server_args=ServerArgs(model_path='${model}', tp_size=${tp}, context_length=${maxLen}, mem_fraction_static=${mem}, node_rank=${rank})`)],
    waiting: (n, where) => [line(`Waiting for ${n} node(s) to join the process group at ${where}`)],
    joined: (r, ip) => [line(`Node rank ${r} (${ip}) joined`)],
    load: (b, proofs) => {
      const tokens = c.kvTokens(b, mem, /^fp8/.test(kvDtype || ""), tp);
      return [
        tpLine("Load weight begin. avail mem=119.50 GB"),
        ...proofs.map((p) => tpLine(p)),
        tpLine("Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=64.10 GB, mem usage=55.40 GB."),
        tpLine(`KV Cache is allocated. #tokens: ${tokens}, K size: 20.00 GB, V size: 20.00 GB`),
        tpLine(`max_total_num_tokens=${tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, context_len=${maxLen}`),
      ];
    },
    ready: () => [
      uv(`Started server process [${process.pid}]`),
      uv("Waiting for application startup."),
      uv("Application startup complete."),
      uv(`Uvicorn running on http://${listen.shown}:${listen.port} (Press CTRL+C to quit)`),
      line(rank === 0 ? "The server is fired up and ready to roll!" : `Node rank ${rank} is ready (serving /health only)`),
    ],
    access: (peer, method, url, status) => ["out", `[${c.sglTime()}] INFO:     ${peer} - "${method} ${url} HTTP/1.1" ${status}`],
    shutdown: () => [uv("Shutting down")],
    crash: (why) => ["err", `[${c.sglTime()} TP${rank}] Scheduler hit an exception: RuntimeError: ${why}`],
  };
}

module.exports = { plan };
