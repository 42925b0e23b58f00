"use strict";
// The SGLang contract: `python3 -m sglang.launch_server --model-path M ...`,
// parsed with SGLang 0.5.23's own option table (src/engines/options).
// Every rank serves HTTP on --host/--port; only rank 0 answers the API, the
// others answer /health. Multi-node ranks meet at --dist-init-addr.
const fs = require("node:fs");
const { parseArgs, ArgError, loadTable } = require("./argparse");
const c = require("./common");

const TABLE = loadTable("sglang");
const PROG = TABLE.prog;
const USAGE = TABLE.usage.replace(/^usage: /, "");
const WHERE = "/sgl-workspace/sglang/python/sglang/launch_server.py";

/**
 * prepare_server_args's --config (sglang/srt/utils/server_args_config_parser.py): the YAML's keys
 * become `--key value` in front of argv, so command-line flags win. The test site reads the flat
 * mappings sm121 writes (`{}`, `key: 'value'`, `key: value`, `key: true`) and refuses other YAML.
 */
function mergeConfig(argv) {
  const at = argv.indexOf("--config");
  if (at < 0) return argv;
  if (argv.indexOf("--config", at + 1) >= 0)
    throw c.pyExit(WHERE, "ValueError", "Multiple config files specified! Only one allowed.");
  if (at === argv.length - 1) throw c.pyExit(WHERE, "ValueError", "No config file specified after --config flag!");
  const file = argv[at + 1];
  if (!/\.ya?ml$/i.test(file))
    throw c.pyExit(WHERE, "ValueError", `Config file must be YAML format, got: ${(/\.[^./]*$/.exec(file) || [""])[0]}`);
  if (!fs.existsSync(file)) throw c.pyExit(WHERE, "ValueError", `Config file not found: ${file}`);
  const text = fs.readFileSync(file, "utf8");
  const args = [];
  if (text.trim() !== "{}" && text.trim() !== "") {
    for (const line of text.split("\n").filter((l) => l.trim() !== "")) {
      const m = /^([A-Za-z0-9_-]+):\s*(?:'((?:[^']|'')*)'|"([^"\\]*)"|([^'"#\s][^#]*?))\s*$/.exec(line);
      if (!m)
        throw c.pyExit(
          WHERE,
          "ValueError",
          `test site: the fake engine reads flat 'key: value' YAML only, not: ${line}`,
        );
      const value = m[2] !== undefined ? m[2].replace(/''/g, "'") : m[3] !== undefined ? m[3] : m[4];
      const flag = TABLE.options.find((o) => o.spellings.includes(`--${m[1]}`));
      if (m[4] === "true" || m[4] === "false") {
        if (flag && flag.action === "_StoreTrueAction") {
          if (m[4] === "true") args.push(`--${m[1]}`);
        } else args.push(`--${m[1]}`, m[4]);
      } else args.push(`--${m[1]}`, value);
    }
  }
  return [...args, ...argv.slice(0, at), ...argv.slice(at + 2)];
}

function plan(argv) {
  if (argv.includes("-h") || argv.includes("--help")) throw new c.EngineExit(0, `usage: ${USAGE}\n`);
  let a;
  try {
    a = parseArgs(TABLE, mergeConfig(argv)).values;
  } catch (err) {
    if (err instanceof ArgError) throw c.argparseExit(PROG, USAGE, err.message);
    throw err;
  }
  const fail = (type, msg) => c.pyExit(WHERE, type, msg);
  const tp = a.tp_size !== undefined ? a.tp_size : 1;
  const nnodes = a.nnodes !== undefined ? a.nnodes : 1;
  const rank = a.node_rank !== undefined ? a.node_rank : 0;
  if (tp < 1 || nnodes < 1) throw fail("ValueError", "tp_size and nnodes must be >= 1");
  if (a.dp_size !== undefined && a.dp_size > 1)
    throw fail("NotImplementedError", "test site: data parallelism (--dp-size > 1) is not simulated");
  if (tp % nnodes !== 0) throw fail("AssertionError", `tp_size (${tp}) must be divisible by nnodes (${nnodes})`);
  if (tp / nnodes > 1)
    throw fail(
      "RuntimeError",
      `CUDA error: invalid device ordinal (tp_size ${tp} over ${nnodes} node(s) needs ${tp / nnodes} GPUs per node; ` +
        `a DGX Spark has 1)`,
    );
  const mem = a.mem_fraction_static !== undefined && a.mem_fraction_static !== null ? a.mem_fraction_static : 0.88;
  if (!(mem > 0 && mem < 1)) throw fail("ValueError", `mem_fraction_static must be in (0, 1), got ${mem}`);
  if (rank < 0 || rank >= nnodes) throw fail("AssertionError", `node_rank (${rank}) must be in [0, nnodes=${nnodes})`);
  let dist = null;
  if (nnodes > 1) {
    if (a.dist_init_addr === undefined || a.dist_init_addr === null)
      throw fail(
        "ValueError",
        "--dist-init-addr is required when --nnodes > 1 (test site: SGLang's single-node default is not simulated)",
      );
    // torch.distributed's tcp:// rendezvous (SGLang passes tcp://<dist_init_addr>) needs a port.
    const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(a.dist_init_addr);
    if (!m)
      throw fail(
        "ValueError",
        `Error initializing torch.distributed using tcp:// rendezvous: port number missing (tcp://${a.dist_init_addr})`,
      );
    dist = { addr: m[1], port: Number(m[2]) };
    // SGLang reads its own address from SGLANG_HOST_IP, else HOST_IP (sglang/srt/utils/network.py).
    const hostIp = process.env.SGLANG_HOST_IP || process.env.HOST_IP;
    if (hostIp !== c.nodeIp()) {
      throw fail(
        "ValueError",
        `SGLANG_HOST_IP=${hostIp === undefined ? "(unset)" : hostIp} (or HOST_IP) is not this ` +
          `node's address (${c.nodeIp()}); the process group would use another interface`,
      );
    }
    if (rank === 0 && dist.addr !== c.nodeIp())
      throw fail(
        "OSError",
        `[Errno 99] Cannot assign requested address: rank 0 cannot listen on --dist-init-addr ${a.dist_init_addr}`,
      );
  }
  const template = a.chat_template;
  if (template !== undefined && template !== null && template.includes("/") && !fs.existsSync(template)) {
    throw fail("FileNotFoundError", `[Errno 2] No such file or directory: '${a.chat_template}'`);
  }
  c.checkModel(WHERE, a.model_path);
  const port = a.port !== undefined ? a.port : 30000;
  const host = a.host !== undefined ? a.host : "127.0.0.1";
  const listen = { addr: c.bindAddress(WHERE, host, port), port, shown: host };
  const served = [a.served_model_name || a.model_path];
  const maxLen = a.context_length !== undefined && a.context_length !== null ? a.context_length : 131072;
  return {
    engine: "sglang",
    engineVersion: TABLE.version,
    model: a.model_path,
    where: WHERE,
    served,
    ownedBy: "sglang",
    maxModelLen: maxLen,
    // --api-key (or the --config file's api-key); SGLang reads no key from the environment.
    apiKey: a.api_key !== undefined && a.api_key !== null ? a.api_key : null,
    listen,
    healthOnly: rank > 0,
    rendezvous: dist
      ? {
          role: rank === 0 ? "head" : "worker",
          addr: dist.addr,
          port: dist.port,
          expect: nnodes - 1,
          rank,
          hello: { engine: "sglang", model: a.model_path, nnodes, tp },
        }
      : null,
    // Without --enable-metrics SGLang mounts no /metrics. The running limit is
    // --max-running-requests, else 256 (the real one derives it from the KV pool).
    metrics:
      a.enable_metrics !== true
        ? null
        : {
            on: true,
            maxRunning: a.max_running_requests || 256,
            kvTokens: (b) => c.kvTokens(b, mem, /^fp8/.test(a.kv_cache_dtype || ""), tp),
          },
    log: sglangLog(a.model_path, maxLen, mem, a.kv_cache_dtype, tp, rank, listen),
  };
}

function sglangLog(model, maxLen, mem, kvDtype, tp, rank, listen) {
  const line = (msg) => ["out", `[${c.sglTime()}] ${msg}`];
  const tpLine = (msg) => ["out", `[${c.sglTime()} TP${rank}] ${msg}`];
  const uv = (msg) => ["err", `[${c.sglTime()}] INFO:     ${msg}`];
  return {
    start: () => [
      line(
        `server_args=ServerArgs(model_path='${model}', tp_size=${tp}, context_length=${maxLen}, ` +
          `mem_fraction_static=${mem}, node_rank=${rank})`,
      ),
    ],
    waiting: (n, where) => [line(`Waiting for ${n} node(s) to join the process group at ${where}`)],
    joined: (r, ip) => [line(`Node rank ${r} (${ip}) joined`)],
    load: (b, proofs) => {
      const tokens = c.kvTokens(b, mem, /^fp8/.test(kvDtype || ""), tp);
      return [
        tpLine("Load weight begin. avail mem=119.50 GB"),
        ...proofs.map((p) => tpLine(p)),
        tpLine("Load weight end. type=Qwen3ForCausalLM, dtype=torch.bfloat16, avail mem=64.10 GB, mem usage=55.40 GB."),
        tpLine(`KV Cache is allocated. #tokens: ${tokens}, K size: 20.00 GB, V size: 20.00 GB`),
        tpLine(
          `max_total_num_tokens=${tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, context_len=${maxLen}`,
        ),
      ];
    },
    ready: () => [
      uv(`Started server process [${process.pid}]`),
      uv("Waiting for application startup."),
      uv("Application startup complete."),
      uv(`Uvicorn running on http://${listen.shown}:${listen.port} (Press CTRL+C to quit)`),
      line(
        rank === 0 ? "The server is fired up and ready to roll!" : `Node rank ${rank} is ready (serving /health only)`,
      ),
    ],
    access: (peer, method, url, status) => [
      "out",
      `[${c.sglTime()}] INFO:     ${peer} - "${method} ${url} HTTP/1.1" ${status}`,
    ],
    shutdown: () => [uv("Shutting down")],
    crash: (why) => ["err", `[${c.sglTime()} TP${rank}] Scheduler hit an exception: RuntimeError: ${why}`],
  };
}

module.exports = { plan };
