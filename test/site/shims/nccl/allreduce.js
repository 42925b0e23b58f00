#!/usr/bin/env node
"use strict";
// Stand-in for torch.distributed + NCCL on a GPU (what sm121's link test script,
// allreduce.py, runs): `python3 .../allreduce.py` comes here (shims/python3). One process per
// rank, met at MASTER_ADDR:MASTER_PORT over TCP as torch's env:// rendezvous does: rank 0
// listens, the others connect; a peer that never comes fails the rank after
// SM121_LINKTEST_TIMEOUT_S, as torch's store does. NCCL's part (./comm.js) decides each rank's
// network from what its node has, as NCCL does (./net.js), prints NCCL's INFO lines and moves
// each size's bytes over that TCP link; rank 0 prints the script's table (nccl-tests' columns)
// with the numbers of real runs (test/fixtures/fabric), for the fixture's sizes within -b/-e.
// Ranks on different networks never finish, as with NCCL: torch's watchdog ends them after
// the process group's timeout.
const net = require("node:net");
const { allReduce } = require("./comm.js");

const env = process.env;
const rank = Number(env.RANK);
const world = Number(env.WORLD_SIZE);
const lo = Number(env.SM121_LINKTEST_MIN_BYTES ?? "8");
const hi = Number(env.SM121_LINKTEST_MAX_BYTES ?? "1073741824");
const timeoutMs = Number(env.SM121_LINKTEST_TIMEOUT_S ?? "120") * 1000;
const master = env.MASTER_ADDR ?? "";
const port = Number(env.MASTER_PORT);
const ifname = (env.NCCL_SOCKET_IFNAME ?? "eth0").split(",")[0];
const own = env.VLLM_HOST_IP ?? env.SGLANG_HOST_IP ?? master;
const oob = `${ifname}:${rank === 0 ? master : own}<0>`;

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

async function rendezvous() {
  if (rank === 0) {
    return new Promise((resolve) => {
      const peers = [];
      const server = net.createServer((s) => {
        peers.push(s);
        if (peers.length === world - 1) {
          clearTimeout(timer);
          server.close();
          resolve(peers);
        }
      });
      const timer = setTimeout(
        () =>
          fail(
            `torch.distributed.DistStoreError: Timed out after ${timeoutMs / 1000} seconds waiting for clients. ` +
              `${peers.length + 1}/${world} clients joined.`,
          ),
        timeoutMs,
      );
      server.on("error", (e) =>
        fail(
          "torch.distributed.DistNetworkError: The server socket has failed to listen on any local network address. " +
            `port: ${port}, ${e.message}`,
        ),
      );
      server.listen(port, master);
    });
  }
  const until = Date.now() + timeoutMs;
  for (;;) {
    const s = await new Promise((resolve) => {
      const c = net.connect(port, master, () => resolve(c));
      c.once("error", () => resolve(undefined));
    });
    if (s !== undefined) return [s];
    if (Date.now() > until)
      fail(
        `torch.distributed.DistNetworkError: The client socket has timed out after ${timeoutMs / 1000}s ` +
          `while trying to connect to (${master}, ${port}).`,
      );
    await new Promise((r) => setTimeout(r, 200));
  }
}

async function main() {
  if (!Number.isInteger(rank) || !Number.isInteger(world) || master === "" || !Number.isInteger(port)) {
    fail(
      "ValueError: Error initializing torch.distributed using env:// rendezvous: " +
        "environment variable RANK, WORLD_SIZE, MASTER_ADDR or MASTER_PORT expected, but not set",
    );
  }
  const sockets = await rendezvous();
  if (rank === 0) {
    process.stdout.write(
      `# nThread 1 nGpus 1 minBytes ${lo} maxBytes ${hi} step: 2(factor) warmup iters: 5 iters: 20 ` +
        "agg iters: 1 validation: 1 graph: 0\n#\n",
    );
    process.stdout.write(`#${"out-of-place".padStart(59)}${"in-place".padStart(35)}\n`);
    process.stdout.write(
      "#       size         count      type   redop    root     time   algbw   busbw  #wrong" +
        "     time   algbw   busbw  #wrong\n",
    );
    process.stdout.write(
      "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)" +
        "             (us)  (GB/s)  (GB/s)\n",
    );
  }
  const row = (h) =>
    `${h[0].padStart(9)}  ${h[1].padStart(6)}  ${h[2].padStart(6)}  ${(h[3] === "N/A" ? "0" : h[3]).padStart(6)}`;
  // The first collective creates NCCL's communicator; torch's watchdog ends a collective that
  // outlives the process group's timeout.
  const watchdog = setTimeout(
    () =>
      fail(
        `[rank${rank}]:[E ProcessGroupNCCL.cpp:616] [Rank ${rank}] Watchdog caught collective operation timeout: ` +
          `WorkNCCL(SeqNum=1, OpType=ALLREDUCE, NumelIn=2, NumelOut=2, Timeout(ms)=${timeoutMs}) ` +
          `ran for ${timeoutMs + 10} milliseconds before timing out.`,
      ),
    timeoutMs,
  );
  await allReduce({
    rank,
    world,
    sockets,
    env,
    oob,
    lo,
    hi,
    version: "2.31.2+cuda13.0",
    row: (r) =>
      process.stdout.write(
        `${String(r.bytes).padStart(12)}  ${String(Math.max(r.bytes / 4, 1)).padStart(12)}  ` +
          `${"float".padStart(8)}  ${"sum".padStart(6)}  ${"-1".padStart(6)}  ${row(r.half[0])}  ${row(r.half[1])}\n`,
      ),
  });
  clearTimeout(watchdog);
}

main().catch((e) => fail(`RuntimeError: ${e.message}`));
