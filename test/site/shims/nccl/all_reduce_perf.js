#!/usr/bin/env node
"use strict";
// Stand-in for nccl-tests' all_reduce_perf (NVIDIA/nccl-tests, built with MPI=1), which needs the
// GPU: its options are the real getopt string and long options (src/common.cu of nccl-tests
// 2.19.6); its output is the real one's, line for line (src/util.cu's header, rows and footer,
// as in test/fixtures/fabric/nccl-tests-gb10-roce.txt), with the numbers of that real two-Spark
// run (IB) or of the real IB-disabled run (Socket), as ./comm.js decides each rank's network.
// Its MPI is the site's MPI stand-in (./mpirun.js, ./orted.js): rank and size from the
// OMPI_COMM_WORLD_* variables OpenMPI gives a process, and MPI_Bcast/MPI_Gather through the
// stand-in's daemon at OMPI_MCA_orte_hnp_uri.
const net = require("node:net");
const os = require("node:os");
const { allReduce } = require("./comm.js");
const { nodeIp } = require("../lib/node.js");
const { runtime } = require("./mpiwire.js");

const SHORT = "t:g:b:e:i:f:n:m:w:N:p:I:K:c:o:d:r:z:y:T:hG:C:a:R:x:D:V:J:S:M:u:";
const LONG = {
  nthreads: "t",
  ngpus: "g",
  minbytes: "b",
  maxbytes: "e",
  stepbytes: "i",
  stepfactor: "f",
  iters: "n",
  agg_iters: "m",
  warmup_iters: "w",
  run_cycles: "N",
  parallel_init: "p",
  check: "c",
  op: "o",
  datatype: "d",
  root: "r",
  blocking: "z",
  stream_null: "y",
  timeout: "T",
  cudagraph: "G",
  report_cputime: "C",
  report_timestamps: "S",
  output_file: "J",
  average: "a",
  local_register: "R",
  cta_policy: "x",
  device_implementation: "D",
  device_cta_count: "V",
  memory: "M",
  unalign: "u",
  per_iter_timing: "I",
  per_iter_skip: "K",
  help: "h",
};
const prog = "all_reduce_perf";

function usage(bad) {
  if (bad) process.stderr.write(`${prog}: ${bad}\n`);
  process.stdout.write(
    `USAGE: ${prog} \n\t[-t,--nthreads <num threads>] \n\t[-g,--ngpus <gpus per thread>] \n\t` +
      "[-b,--minbytes <min size in bytes>] \n\t[-e,--maxbytes <max size in bytes>] \n\t" +
      "[-i,--stepbytes <increment size>] \n\t[-f,--stepfactor <increment factor>] \n\t" +
      "[-n,--iters <iteration count>] \n\t[-w,--warmup_iters <warmup iteration count>] \n\t" +
      "[-c,--check <check iteration count>] \n\t[-o,--op <sum/prod/min/max/avg/mulsum/all>] \n\t[-h,--help]\n",
  );
  process.exit(0);
}

/** getopt_long's reading of argv: `-b 8`, `-b8`, `--minbytes 8`, `--minbytes=8`. */
function options(argv) {
  const o = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    let key;
    let val;
    if (a.startsWith("--")) {
      const [name, inline] = a.slice(2).split(/=(.*)/s);
      key = LONG[name];
      if (key === undefined) usage(`unrecognized option '${a}'`);
      val = inline;
    } else if (a.startsWith("-") && a.length > 1) {
      key = a[1];
      if (!SHORT.includes(key) || key === ":") usage(`invalid option -- '${key}'`);
      val = a.length > 2 ? a.slice(2) : undefined;
    } else continue; // getopt permutes non-options to the end; the test ignores them
    if (key === "h") usage();
    if (val === undefined) {
      if (i + 1 >= argv.length) usage(`option requires an argument -- '${key}'`);
      val = argv[++i];
    }
    o[key] = val;
  }
  return o;
}

/** nccl-tests' parsesize: a number with an optional K, M or G (powers of 1024); -1 when unreadable. */
function parsesize(v) {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([KkMmGg]?)/.exec(v);
  if (m === null) return -1;
  return Math.floor(Number(m[1]) * { "": 1, k: 1024, m: 1 << 20, g: 1 << 30 }[m[2].toLowerCase()]);
}

const o = options(process.argv.slice(2));
const size = (k, name, d) => {
  if (o[k] === undefined) return d;
  const n = parsesize(o[k]);
  if (n < 0) {
    process.stderr.write(`invalid size specified for '${name}'\n`);
    process.exit(255);
  }
  return n;
};
const minBytes = size("b", "minbytes", 32 << 20);
const maxBytes = size("e", "maxbytes", 32 << 20);
const factor = Number(o.f ?? "1");
const warmup = Number(o.w ?? "1");
const iters = Number(o.n ?? "20");
const check = Number(o.c ?? "1");
if (minBytes > maxBytes) {
  process.stderr.write(`invalid sizes for 'minbytes' and 'maxbytes': ${minBytes} > ${maxBytes}\n`);
  process.exit(255);
}

const env = process.env;
const rank = Number(env.OMPI_COMM_WORLD_RANK ?? "0");
const world = Number(env.OMPI_COMM_WORLD_SIZE ?? "1");
const print = (s) => rank === 0 && process.stdout.write(s);
const fmt = (v, w) => {
  for (const d of [2, 1, 0]) if (v.toFixed(d).length <= w) return v.toFixed(d).padStart(w);
  return v.toExponential(w >= 7 ? 1 : 0).padStart(w);
};

async function main() {
  const mpi = runtime(env);
  const own = env.VLLM_HOST_IP || env.SGLANG_HOST_IP || nodeIp() || "127.0.0.1";
  const ifname = (env.NCCL_SOCKET_IFNAME ?? "eth0").split(",")[0];
  const devices = await mpi.gather(
    "devices",
    `#  Rank ${String(rank).padStart(2)} Group  0 Pid ${String(process.pid).padStart(6)} ` +
      `on ${os.hostname().padStart(10)} ` +
      "device  0 [000f:01:00] NVIDIA GB10\n",
  );
  print("# nccl-tests version 2.20.0 (b4d5bee) nccl-headers=23102 nccl-library=23102\n");
  print(`# Collective test starting: ${prog}\n`);
  print(
    `# nThread 1 nGpus 1 minBytes ${minBytes} maxBytes ${maxBytes} step: ${factor > 1 ? factor : 1048576}` +
      `(${factor > 1 ? "factor" : "bytes"}) warmup iters: ${warmup} iters: ${iters} agg iters: 1 ` +
      `validation: ${check} ` +
      "graph: 0 unalign: 0\n#\n# Using devices\n",
  );
  if (devices !== undefined) print(devices.join(""));
  print("#\n");
  const col = (a) =>
    `# ${a[0].padStart(10)}  ${a[1].padStart(12)}  ${a[2].padStart(8)}  ${a[3].padStart(6)}  ${a[4].padStart(6)}`;
  print(`${col(["", "", "", "", ""])}           out-of-place                       in-place          \n`);
  const half = (t) => `  ${t[0].padStart(7)}  ${t[1].padStart(6)}  ${t[2].padStart(6)}  ${t[3].padStart(6)}`;
  const names = half(["time", "algbw", "busbw", "#wrong"]);
  const units = half(["(us)", "(GB/s)", "(GB/s)", ""]);
  print(`${col(["size", "count", "type", "redop", "root"])}${names}${names} \n`);
  print(`${col(["(B)", "(elements)", "", "", ""])}${units}${units} \n`);
  // NCCL's bootstrap: rank 0 listens (ncclGetUniqueId), MPI_Bcast hands the others its address.
  let sockets;
  if (rank === 0) {
    const peers = [];
    const server = net.createServer((s) => peers.push(s));
    await new Promise((r) => server.listen(0, own, r));
    const done = new Promise((r) => server.on("connection", () => peers.length === world - 1 && r()));
    await mpi.bcast("ncclUniqueId", `${own}:${server.address().port}`);
    if (world > 1) await done;
    server.close();
    sockets = peers;
  } else {
    const [host, port] = (await mpi.bcast("ncclUniqueId")).split(":");
    const c = await new Promise((res, rej) => {
      const s = net.connect(Number(port), host, () => res(s));
      s.on("error", rej);
    });
    sockets = [c];
  }
  const bws = [];
  const table = await allReduce({
    rank,
    world,
    sockets,
    env,
    oob: `${ifname}:${own}<0>`,
    lo: minBytes,
    hi: maxBytes,
    version: "2.31.2+cuda13.0",
    row: (r) => {
      const wrong = (w) => String(w === "N/A" ? 0 : Number(w)).padStart(6);
      const body = (h) => `  ${fmt(Number(h[0]), 7)}  ${fmt(Number(h[1]), 6)}  ${fmt(Number(h[2]), 6)}  ${wrong(h[3])}`;
      bws.push(Number(r.half[0][2]));
      const head =
        `${String(r.bytes).padStart(12)}  ${String(Math.max(r.bytes / 4, 1)).padStart(12)}  ` +
        `${"float".padStart(8)}  ${"sum".padStart(6)}  ${"-1".padStart(6)}`;
      print(`${head}${body(r.half[0])}${body(r.half[1])}\n`);
    },
  });
  const avg = bws.length === 0 ? 0 : bws.reduce((a, b) => a + b, 0) / bws.length;
  print(`# ${"Out of bounds values".padEnd(20)} : 0 OK\n`);
  print(`# ${"Avg bus bandwidth".padEnd(20)} : ${Number(avg.toPrecision(6))} \n#\n`);
  print(`# Collective test concluded: ${prog}\n`);
  void table;
  await mpi.finalize();
}

main().catch((e) => {
  process.stderr.write(`${os.hostname()}: Test failure ${e.message}\n`);
  process.exit(1);
});
