#!/usr/bin/env node
"use strict";
// Stand-in for torch.distributed + NCCL on a GPU (what sm121's link test script,
// allreduce.py, runs): `python3 .../allreduce.py` comes here (shims/python3). One process per
// rank, met at MASTER_ADDR:MASTER_PORT over TCP as torch's env:// rendezvous does: rank 0
// listens, the others connect; a peer that never comes fails the rank after
// SM121_LINKTEST_TIMEOUT_S, as torch's store does. Each size moves real bytes between the
// ranks over that TCP link. Which network "NCCL" uses is decided as NCCL's own: IB when
// NCCL_IB_DISABLE is not 1, NCCL_IB_HCA names ports, /dev/infiniband holds uverbs character
// devices and the process has CAP_IPC_LOCK (the RDMA access sm121 renders); Socket otherwise.
// Its NCCL_DEBUG=INFO lines are NCCL's format, and rank 0's table is nccl-tests' with the
// numbers of real runs (test/fixtures/fabric: the GB10 RoCE run for IB, the IB-disabled run
// for Socket), printed for the fixture's sizes within -b/-e.
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const env = process.env;
const rank = Number(env.RANK);
const world = Number(env.WORLD_SIZE);
const lo = Number(env.SM121_LINKTEST_MIN_BYTES ?? "8");
const hi = Number(env.SM121_LINKTEST_MAX_BYTES ?? "1073741824");
const timeoutMs = Number(env.SM121_LINKTEST_TIMEOUT_S ?? "120") * 1000;
const master = env.MASTER_ADDR ?? "";
const port = Number(env.MASTER_PORT);
const info = (env.NCCL_DEBUG ?? "").toUpperCase() === "INFO";
const prefix = `${os.hostname()}:${process.pid}:${process.pid} [0]`;
const say = (l) => info && process.stdout.write(`${prefix} NCCL INFO ${l}\n`);

function fixturesDir() {
  const inImage = path.join(__dirname, "fixtures");
  return fs.existsSync(inImage) ? inImage : path.join(__dirname, "..", "..", "..", "fixtures", "fabric");
}

/** The fixture's table rows: the columns after size, count, type (redop and root where it has them). */
function rows(file) {
  const out = [];
  for (const line of fs.readFileSync(path.join(fixturesDir(), file), "utf8").split("\n")) {
    const t = line.trim().split(/\s+/);
    if (!/^\d+$/.test(t[0] ?? "") || t.length < 11) continue;
    const last = t.slice(-8);
    out.push({ bytes: Number(t[0]), half: [last.slice(0, 4), last.slice(4)] });
  }
  return out;
}

function ipcLock() {
  const m = /^CapEff:\s*([0-9a-f]+)/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
  return m !== null && ((BigInt(`0x${m[1]}`) >> 14n) & 1n) === 1n;
}

function rdmaDevices() {
  try {
    return fs
      .readdirSync("/dev/infiniband")
      .filter((d) => d.startsWith("uverbs") && fs.statSync(`/dev/infiniband/${d}`).isCharacterDevice());
  } catch {
    return [];
  }
}

const hcas = (env.NCCL_IB_HCA ?? "").split(",").filter((h) => h !== "" && h !== "auto");
const ib = env.NCCL_IB_DISABLE !== "1" && hcas.length > 0 && rdmaDevices().length > 0 && ipcLock();
const ifname = (env.NCCL_SOCKET_IFNAME ?? "eth0").split(",")[0];
const own = env.VLLM_HOST_IP ?? env.SGLANG_HOST_IP ?? master;
const oob = `${ifname}:${rank === 0 ? master : own}<0>`;

function fail(message) {
  process.stderr.write(`${message}\n`);
  process.exit(1);
}

/** Counts what a socket received; `until(n)` resolves once n more bytes than before came. */
function counted(sock) {
  let got = 0;
  let want = 0;
  let wake = () => undefined;
  let broken;
  sock.on("data", (chunk) => {
    got += chunk.length;
    if (got >= want) wake();
  });
  sock.on("error", (e) => {
    broken = e;
    wake();
  });
  sock.on("close", () => {
    broken ??= new Error("the peer closed the connection");
    wake();
  });
  return {
    sock,
    until: (n) => {
      want += n;
      return new Promise((resolve, reject) => {
        wake = () => (got >= want ? resolve() : broken !== undefined ? reject(broken) : undefined);
        wake();
      });
    },
  };
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
  const peers = (await rendezvous()).map(counted);
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
  say(`Bootstrap : Using ${oob}`);
  say("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation");
  if (ib)
    say(
      `NET/IB : Using ${hcas.map((h, i) => `[${i}]${h.split(":")[0]}:${h.split(":")[1] ?? "1"}/RoCE`).join(" ")} ` +
        `[RO]; OOB ${oob}`,
    );
  else say(`NET/Socket : Using [0]${oob}`);
  say(`Using network ${ib ? "IB" : "Socket"}`);
  if (rank === 0) process.stdout.write("NCCL version 2.31.2+cuda13.0\n");
  say(`Channel 00/0 : ${rank}[0] -> ${(rank + 1) % world}[0] [send] via NET/${ib ? "IB" : "Socket"}/0`);
  const table = rows(ib ? "nccl-tests-gb10-roce.txt" : "nccl-tests-socket-broadcast.txt").filter(
    (r) => r.bytes >= lo && r.bytes <= hi,
  );
  for (const r of table) {
    const n = Math.min(r.bytes, 1 << 20);
    // The reduce's bytes go to rank 0 and back, over the TCP link the ranks met on.
    if (rank === 0) {
      await Promise.all(peers.map((p) => p.until(n)));
      for (const p of peers) p.sock.write(Buffer.alloc(n, 1));
      const [a, b] = r.half;
      const row = (h) =>
        `${h[0].padStart(9)}  ${h[1].padStart(6)}  ${h[2].padStart(6)}  ${(h[3] === "N/A" ? "0" : h[3]).padStart(6)}`;
      process.stdout.write(
        `${String(r.bytes).padStart(12)}  ${String(Math.max(r.bytes / 4, 1)).padStart(12)}  ` +
          `${"float".padStart(8)}  ${"sum".padStart(6)}  ${"-1".padStart(6)}  ${row(a)}  ${row(b)}\n`,
      );
    } else {
      const p = peers[0];
      p.sock.write(Buffer.alloc(n, 1));
      await p.until(n);
    }
  }
  for (const p of peers) p.sock.end();
}

main().catch((e) => fail(`RuntimeError: ${e.message}`));
