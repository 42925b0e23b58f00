"use strict";
// The DGPP processes that scripts/dgpp-cluster starts (internal contract):
//   dgpp --config <cluster.json> --env <.env>       the manager, on rank 0
//   dgpp-worker --head IP:PORT --rank R --world N --model M   one per peer
// The manager serves the API on http.port of rank 0 once every peer joined.
const fs = require("node:fs");
const c = require("./common");

function die(msg) {
  return new c.EngineExit(1, `dgpp: ${msg}\n`);
}

function options(argv, names) {
  const o = {};
  for (let i = 0; i < argv.length; i += 2) {
    if (!names.includes(argv[i]) || argv[i + 1] === undefined) throw die(`bad arguments: ${argv.join(" ")}`);
    o[argv[i].slice(2)] = argv[i + 1];
  }
  for (const n of names) if (!(n.slice(2) in o)) throw die(`missing ${n}`);
  return o;
}

function readEnvFile(file) {
  const env = {};
  for (const line of fs.readFileSync(file, "utf8").split("\n")) {
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (!m) continue;
    env[m[1]] = m[2]
      .trim()
      .replace(/^"(.*)"$/, "$1")
      .replace(/^'(.*)'$/, "$1");
  }
  return env;
}

function log(role) {
  const out = (msg) => ["out", `dgpp ${new Date().toISOString()} [${role}] ${msg}`];
  return out;
}

function managerPlan(argv) {
  const o = options(argv, ["--config", "--env"]);
  let cfg;
  try {
    cfg = JSON.parse(fs.readFileSync(o.config, "utf8"));
  } catch (err) {
    throw die(`config ${o.config}: ${err.message}`);
  }
  const env = readEnvFile(o.env);
  const nodes = (env.DGPP_NODES || "").split(/\s+/).filter((x) => x);
  if (nodes[0] !== c.nodeIp()) throw die(`the manager runs on DGPP_NODES[0] (${nodes[0]}), not on ${c.nodeIp()}`);
  const port = cfg.http.port;
  const rdzv = (cfg.rendezvous && cfg.rendezvous.port) || Number(env.DGPP_RDZV_PORT || 29600);
  const listen = {
    addr: c.bindAddress("dgpp", cfg.http.host || nodes[0], port),
    port,
    shown: cfg.http.host || nodes[0],
  };
  const maxLen = (cfg.engine && cfg.engine.max_model_len) || 131072;
  const out = log("manager");
  return {
    engine: "dgpp",
    model: cfg.model,
    where: "dgpp",
    served: [cfg.model],
    ownedBy: "dgpp",
    maxModelLen: maxLen,
    apiKey: cfg.http.api_key || null,
    listen,
    healthOnly: false,
    rendezvous:
      nodes.length === 1
        ? null
        : {
            role: "head",
            addr: nodes[0],
            port: rdzv,
            expect: nodes.length - 1,
            rank: 0,
            hello: { engine: "dgpp", model: cfg.model, nnodes: nodes.length },
          },
    log: {
      start: () => [out(`manager for ${cfg.model}, world_size ${cfg.world_size}, nodes ${nodes.join(" ")}`)],
      waiting: (n, where) => [out(`waiting for ${n} peer worker(s) on ${where}`)],
      joined: (r, ip) => [out(`peer rank ${r} (${ip}) joined`)],
      load: (b, proofs) => [
        out(`loading ${cfg.model} with engine ${JSON.stringify(cfg.engine || {})}`),
        ...proofs.map((p) => out(p)),
        out(`KV cache: ${c.commas(c.kvTokens(b, 0.9, false, nodes.length))} tokens`),
      ],
      ready: () => [out(`serving ${cfg.model} on http://${listen.shown}:${port}`)],
      access: (peer, method, url, status) => out(`${peer} ${method} ${url} ${status}`),
      shutdown: () => [out("shutting down")],
      crash: (why) => ["err", `dgpp [manager] fatal: ${why}`],
    },
  };
}

function workerPlan(argv) {
  const o = options(argv, ["--head", "--rank", "--world", "--model"]);
  const m = /^(\d+\.\d+\.\d+\.\d+):(\d+)$/.exec(o.head);
  if (!m) throw die(`--head must be IP:PORT, got ${o.head}`);
  const rank = Number(o.rank);
  const out = log(`worker ${rank}`);
  return {
    engine: "dgpp-worker",
    model: o.model,
    where: "dgpp",
    served: [o.model],
    ownedBy: "dgpp",
    maxModelLen: 0,
    apiKey: null,
    listen: null,
    healthOnly: false,
    rendezvous: {
      role: "worker",
      addr: m[1],
      port: Number(m[2]),
      expect: 0,
      rank,
      hello: { engine: "dgpp", model: o.model, nnodes: Number(o.world) },
    },
    log: {
      start: () => [out(`worker rank ${rank} on ${c.nodeIp()}, manager ${o.head}`)],
      waiting: () => [],
      joined: () => [],
      load: (b, proofs) => proofs.map((p) => out(p)),
      ready: () => [out("worker ready")],
      access: () => out(""),
      shutdown: () => [out("shutting down")],
      crash: (why) => ["err", `dgpp [worker ${rank}] fatal: ${why}`],
    },
  };
}

module.exports = { managerPlan, workerPlan };
