"use strict";
// NCCL's part of an all-reduce run, shared by the two programs of the link test's stand-ins (the
// torch script, allreduce.js; nccl-tests' all_reduce_perf, all_reduce_perf.js): given the ranks'
// TCP connections (rank 0 holds one to every peer, a peer one to rank 0), it prints NCCL's
// NCCL_DEBUG=INFO lines for this rank's network (./net.js), lets the ranks learn each other's
// network, and moves each size's bytes to rank 0 and back, handing rank 0 the real run's numbers
// to print. Ranks on different networks never connect, as with NCCL (NVIDIA/nccl#234: it hangs;
// NVIDIA/nccl-tests#188: the socket side warns `wrong type 4 != 3`): the run then waits until its
// caller's timeout, if it has one.
const fs = require("node:fs");
const path = require("node:path");
const { chooseNet, prefix } = require("./net.js");

/**
 * A rank's connection: its first byte is the peer's network (I or S, `first()`), then payload,
 * counted: `until(n)` resolves once n more bytes than before came.
 */
function counted(sock) {
  let got = 0;
  let want = 0;
  let wake = () => undefined;
  let broken;
  let header;
  const first = new Promise((resolve, reject) => {
    header = { resolve, reject };
  });
  sock.on("data", (chunk) => {
    if (header !== undefined) {
      header.resolve(String.fromCharCode(chunk[0]));
      header = undefined;
      chunk = chunk.subarray(1);
    }
    got += chunk.length;
    if (got >= want) wake();
  });
  const end = (e) => {
    broken ??= e;
    header?.reject(broken);
    wake();
  };
  sock.on("error", end);
  sock.on("close", () => end(new Error("the peer closed the connection")));
  return {
    sock,
    first: () => first,
    until: (n) => {
      want += n;
      return new Promise((resolve, reject) => {
        wake = () => (got >= want ? resolve() : broken !== undefined ? reject(broken) : undefined);
        wake();
      });
    },
  };
}

function fixturesDir() {
  const inImage = path.join(__dirname, "fixtures");
  return fs.existsSync(inImage) ? inImage : path.join(__dirname, "..", "..", "..", "fixtures", "fabric");
}

/** A real run's table rows: size and the last eight columns (both halves' time, algbw, busbw, #wrong). */
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

/**
 * One rank's run. `o`: rank, world, sockets (rank 0: one a peer; else [rank 0's]), env, oob (the
 * bootstrap interface:address), lo/hi (the sizes), version (rank 0 prints `NCCL version`),
 * row(r) (rank 0 prints a size's numbers). Resolves when every size is done.
 */
async function allReduce(o) {
  const info = (o.env.NCCL_DEBUG ?? "").toUpperCase() === "INFO";
  const p = prefix();
  const line = (level, l) => info && process.stdout.write(`${p} NCCL ${level} ${l}\n`);
  const say = (l) => line("INFO", l);
  say(`Bootstrap : Using ${o.oob}`);
  say("NET/Plugin : No plugin found (libnccl-net.so), using internal implementation");
  const net = chooseNet(o.env, line);
  if (net.ib) say(`NET/IB : Using ${net.ports.map((h, i) => `[${i}]${h}/RoCE`).join(" ")} [RO]; OOB ${o.oob}`);
  else say(`NET/Socket : Using [0]${o.oob}`);
  say(`Using network ${net.ib ? "IB" : "Socket"}`);
  if (o.rank === 0) process.stdout.write(`NCCL version ${o.version}\n`);
  const peers = o.sockets.map(counted);
  const mine = net.ib ? "I" : "S";
  // Each peer's first byte is its network; rank 0 answers every peer with the one network, or M.
  let kinds;
  if (o.rank === 0) {
    kinds = [mine, ...(await Promise.all(peers.map((c) => c.first())))];
    const agreed = kinds.every((k) => k === mine) ? mine : "M";
    for (const c of peers) c.sock.write(agreed);
    kinds = [agreed];
  } else {
    const c = peers[0];
    c.sock.write(mine);
    kinds = [await c.first()];
  }
  if (kinds[0] === "M") {
    // An IB rank dials a socket rank's listener: the socket side rejects it, nobody proceeds.
    if (!net.ib) line("WARN", "socketFinalizeAccept: wrong type 4 != 3");
    return new Promise(() => undefined);
  }
  say(`Channel 00/0 : ${o.rank}[0] -> ${(o.rank + 1) % o.world}[0] [send] via NET/${net.ib ? "IB" : "Socket"}/0`);
  const table = rows(net.ib ? "nccl-tests-gb10-roce.txt" : "nccl-tests-socket-broadcast.txt").filter(
    (r) => r.bytes >= o.lo && r.bytes <= o.hi,
  );
  for (const r of table) {
    const n = Math.min(r.bytes, 1 << 20);
    // The reduce's bytes go to rank 0 and back, over the TCP link the ranks met on.
    if (o.rank === 0) {
      await Promise.all(peers.map((c) => c.until(n)));
      for (const c of peers) c.sock.write(Buffer.alloc(n, 1));
      o.row(r);
    } else {
      peers[0].sock.write(Buffer.alloc(n, 1));
      await peers[0].until(n);
    }
  }
  for (const c of peers) c.sock.end();
  return table;
}

module.exports = { allReduce };
