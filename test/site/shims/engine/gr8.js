"use strict";
// The gr8 contract: `/opt/gr8/gr8 glm53 up --model M --tp N --peers ip0,ip1,...
// [--model-cache DIR] [--drafter X] [--shape X]`. No --host/--port: the first
// peer serves the API on :8100 after every peer joined on its :8101.
const fs = require("node:fs");
const c = require("./common");
const sysctl = require("../lib/sysctl-state");

const API_PORT = 8100;
const RDZV_PORT = 8101;
const VALUE_FLAGS = ["--model", "--tp", "--peers", "--model-cache", "--drafter", "--shape"];

function usageExit(msg) {
  return new c.EngineExit(
    2,
    `gr8: error: ${msg}\n` +
      "usage: gr8 glm53 up --model M --tp N --peers IP[,IP...] [--model-cache DIR] [--drafter X] [--shape X]\n",
  );
}

function plan(argv) {
  const [family, action, ...rest] = argv;
  if (family === "--help" || family === "-h" || rest.includes("--help")) {
    throw new c.EngineExit(
      0,
      "usage: gr8 glm53 up --model M --tp N --peers IP[,IP...] [--model-cache DIR] [--drafter X] [--shape X]\n",
    );
  }
  if (family !== "glm53")
    throw usageExit(`unknown model family '${family === undefined ? "" : family}' (known: glm53)`);
  if (action !== "up") throw usageExit(`unknown command '${action === undefined ? "" : action}' for glm53 (known: up)`);
  const a = {};
  for (let i = 0; i < rest.length; i++) {
    const tok = rest[i];
    const eq = tok.indexOf("=");
    const name = eq > 0 ? tok.slice(0, eq) : tok;
    if (name === "--host" || name === "--port")
      throw usageExit(`${name} is not accepted: the API listens on the first peer's :${API_PORT}`);
    if (!VALUE_FLAGS.includes(name))
      throw usageExit(tok.startsWith("-") ? `unknown flag ${name}` : `unexpected argument '${tok}'`);
    let v = eq > 0 ? tok.slice(eq + 1) : rest[++i];
    if (v === undefined || v.startsWith("--")) throw usageExit(`${name} needs a value`);
    if (name in a) throw usageExit(`${name} given twice`);
    a[name] = v;
  }
  for (const req of ["--model", "--tp", "--peers"]) if (!(req in a)) throw usageExit(`missing required flag ${req}`);
  if (!/^\d+$/.test(a["--tp"]) || Number(a["--tp"]) < 1)
    throw usageExit(`--tp must be a positive integer, got '${a["--tp"]}'`);
  const tp = Number(a["--tp"]);
  const peers = a["--peers"].split(",");
  if (peers.some((p) => !/^\d+\.\d+\.\d+\.\d+$/.test(p)))
    throw usageExit(`--peers must be comma-separated IPv4 addresses, got '${a["--peers"]}'`);
  if (new Set(peers).size !== peers.length) throw usageExit(`--peers lists an address twice: ${a["--peers"]}`);
  if (tp !== peers.length) throw usageExit(`--tp ${tp} must equal the number of peers (${peers.length})`);
  const rank = peers.indexOf(c.nodeIp());
  if (rank < 0) throw usageExit(`this host (${c.nodeIp()}) is not in --peers ${a["--peers"]}`);
  if (a["--model-cache"] !== undefined && !fs.existsSync(a["--model-cache"])) {
    throw usageExit(`--model-cache ${a["--model-cache"]}: no such directory`);
  }
  if (a["--shape"] !== undefined && !/^[\w.-]+$/.test(a["--shape"]))
    throw usageExit(`--shape '${a["--shape"]}' is not a shape name`);
  const proactive = sysctl.readAll()["vm.compaction_proactiveness"];
  if (proactive !== "0") throw new c.EngineExit(1, `gr8: vm.compaction_proactiveness must be 0 (got ${proactive})\n`);
  const model = a["--model"];
  const listen =
    rank === 0 ? { addr: c.bindAddress("gr8", peers[0], API_PORT), port: API_PORT, shown: peers[0] } : null;
  return {
    engine: "gr8",
    model,
    where: "gr8",
    served: [model],
    ownedBy: "gr8",
    maxModelLen: 131072,
    apiKey: null,
    listen,
    healthOnly: false,
    rendezvous:
      peers.length === 1
        ? null
        : {
            role: rank === 0 ? "head" : "worker",
            addr: peers[0],
            port: RDZV_PORT,
            expect: peers.length - 1,
            rank,
            hello: { engine: "gr8", model, nnodes: peers.length, tp },
          },
    // Served as vLLM's exporter (see exporter.js), at vLLM's GB10 running limit.
    metrics: { on: true, maxRunning: 256, kvTokens: (b) => c.kvTokens(b, 0.9, true, peers.length) },
    log: gr8Log(model, rank, peers, a["--shape"] || "default", a["--drafter"] || "none"),
  };
}

function gr8Log(model, rank, peers, shape, drafter) {
  const out = (msg) => ["out", `gr8 ${new Date().toISOString()} ${msg}`];
  return {
    start: () => [out(`gr8 0.4.2 glm53 up: rank ${rank}/${peers.length} on ${peers[rank]}`)],
    waiting: (n, where) => [out(`waiting for ${n} peer(s) on ${where}`)],
    joined: (r, ip) => [out(`peer rank ${r} (${ip}) joined`)],
    load: (b, proofs) => [
      out(`loading ${model} (shape ${shape}, drafter ${drafter})`),
      ...proofs.map((p) => out(p)),
      out(`KV cache: ${c.commas(c.kvTokens(b, 0.9, true, peers.length))} tokens`),
    ],
    ready: () => [out(rank === 0 ? `serving ${model} on http://${peers[0]}:${API_PORT}` : `rank ${rank} ready`)],
    access: (peer, method, url, status) => ["out", `gr8 access ${peer} ${method} ${url} ${status}`],
    shutdown: () => [out("shutting down")],
    crash: (why) => ["err", `gr8: fatal: ${why}`],
  };
}

module.exports = { plan };
