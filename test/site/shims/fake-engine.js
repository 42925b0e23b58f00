#!/usr/bin/env node
"use strict";
// The fake inference engine. Entry points (shims) call it as
//   fake-engine.js vllm <vllm args...>          (vllm serve ... / vllm --version)
//   fake-engine.js api_server <args...>         (python3 -m vllm.entrypoints.openai.api_server)
//   fake-engine.js sglang <args...>             (python3 -m sglang.launch_server)
//   fake-engine.js gr8 <args...>                (/opt/gr8/gr8 glm53 up ...)
//   fake-engine.js dgpp | dgpp-worker <args...> (DGPP's manager and peer workers)
// It checks the command line like the real engine, waits for its peers, prints
// the engine's load log, then serves the OpenAI API. Behaviour (slow start,
// never ready, crash, token rate) comes from <root>/etc/fake-engine.json.
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");
const c = require("./engine/common");
const vllm = require("./engine/vllm");
const sglang = require("./engine/sglang");
const gr8 = require("./engine/gr8");
const dgpp = require("./engine/dgpp");
const rendezvous = require("./engine/rendezvous");
const { createServer } = require("./engine/server");
const { register, unregister } = require("./lib/proc");
const { nodeRoot } = require("./lib/node");

const VLLM_SUBCOMMANDS = ["chat", "complete", "serve", "bench", "collect-env", "run-batch"];

function makePlan(mode, args) {
  if (mode === "vllm") {
    if (args[0] === "--version" || args[0] === "-v") return { version: vllm.version };
    if (args[0] !== "serve") {
      const bad =
        args[0] === undefined
          ? "the following arguments are required: subparser"
          : `argument subparser: invalid choice: ` +
            `'${args[0]}' (choose from ${VLLM_SUBCOMMANDS.map((s) => `'${s}'`).join(", ")})`;
      throw c.argparseExit("vllm", "vllm [-h] [-v] {chat,complete,serve,bench,collect-env,run-batch} ...", bad);
    }
    return vllm.plan("serve", args.slice(1));
  }
  if (mode === "api_server") return vllm.plan("api", args);
  if (mode === "sglang") return sglang.plan(args);
  if (mode === "gr8") return gr8.plan(args);
  if (mode === "dgpp") return dgpp.managerPlan(args);
  if (mode === "dgpp-worker") return dgpp.workerPlan(args);
  throw new c.EngineExit(2, `fake-engine: unknown mode '${mode}'\n`);
}

const emit = (entries) => {
  for (const [stream, text] of entries) (stream === "err" ? process.stderr : process.stdout).write(`${text}\n`);
};

function portFree(addr, port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once("error", (err) => resolve(err.code || "error"));
    s.listen(port, addr, () => s.close(() => resolve(null)));
  });
}

/**
 * <root>/run/engine-events.jsonl: when each engine of the node began to serve its port and when it
 * stopped, in ms: what a test reads to check that some replica served at every moment of a roll.
 */
function event(plan, what) {
  const file = path.join(c.nodeRoot(), "run", "engine-events.jsonl");
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const port = plan.listen ? plan.listen.port : null;
  fs.appendFileSync(file, `${JSON.stringify({ event: what, at: Date.now(), pid: process.pid, port })}\n`);
}

async function run(plan, b) {
  register(process.pid, `fake-engine ${plan.engine} ${plan.served[0]}`);
  let serving = false;
  process.on("exit", () => {
    unregister(process.pid);
    if (serving) event(plan, "stopped");
  });
  let server = null;
  const fatal = (why) => {
    emit([plan.log.crash(why)]);
    process.exit(1);
  };
  const onSignal = (sig) => {
    if (b.ignoreSigterm && sig === "SIGTERM") {
      emit([["err", `fake-engine: ignoring ${sig} (fake-engine.json ignoreSigterm)`]]);
      return;
    }
    // vLLM's --shutdown-timeout N: the requests that run finish (up to N s) before it exits;
    // without it (0), it aborts them.
    const drain = server && plan.shutdownTimeoutS > 0 ? server.drain(plan.shutdownTimeoutS) : Promise.resolve();
    void drain.then(() => {
      emit(plan.log.shutdown());
      if (server) server.close();
      process.exit(0);
    });
  };
  process.on("SIGTERM", () => onSignal("SIGTERM"));
  process.on("SIGINT", () => onSignal("SIGINT"));
  plan.onAccess = (peer, method, url, status) => emit([plan.log.access(peer, method, url, status)]);

  emit(plan.log.start());
  if (b.mode === "exit-now") fatal("simulated startup failure (fake-engine.json mode exit-now)");
  if (plan.listen && plan.listen.addr) {
    const busy = await portFree(plan.listen.addr, plan.listen.port);
    if (busy) {
      const e = c.pyExit(
        plan.where,
        "OSError",
        `[Errno 98] error while attempting to bind on address ('${plan.listen.addr}', ${plan.listen.port}): ` +
          `address already in use`,
      );
      process.stderr.write(e.message);
      process.exit(1);
    }
  }
  const hooks = {
    onJoined: (rank, ip) => emit(plan.log.joined(rank, ip)),
    onLost: (why) => fatal(`NCCL error: ${why}`),
  };
  const r = plan.rendezvous;
  try {
    if (r && r.role === "head") {
      emit(plan.log.waiting(r.expect, `${r.addr}:${r.port}`));
      await rendezvous.head(r, hooks);
    } else if (r) {
      await rendezvous.worker(r, c.nodeIp(), b.rendezvousTimeoutS, hooks);
    }
  } catch (err) {
    fatal(err.message);
  }
  const proofs = c.proofs();
  if (b.mode === "crash-loading")
    setTimeout(
      () => fatal("CUDA error: out of memory while loading the weights (simulated crash-loading)"),
      b.crashAfterS * 1000,
    );
  const load = plan.log.load(b, proofs);
  emit(load.slice(0, 1 + proofs.length));
  if (b.mode === "never-ready") {
    setInterval(() => {}, 1 << 30);
    return;
  }
  await c.sleep(b.startDelayS * 1000);
  emit(load.slice(1 + proofs.length));
  if (plan.listen && plan.listen.addr) {
    server = createServer(plan, b);
    await new Promise((resolve) => {
      server.once("error", (err) => fatal(`cannot listen on ${plan.listen.addr}:${plan.listen.port}: ${err.code}`));
      server.listen(plan.listen.port, plan.listen.addr, resolve);
    });
  } else {
    setInterval(() => {}, 1 << 30); // headless, or a container without host network
  }
  if (server) {
    serving = true;
    event(plan, "serving");
  }
  emit(plan.log.ready());
  if (b.mode === "crash-after")
    setTimeout(
      () => fatal("CUDA error: an illegal memory access was encountered (simulated crash-after)"),
      b.crashAfterS * 1000,
    );
}

function main() {
  const [mode, ...args] = process.argv.slice(2);
  let plan;
  let b;
  try {
    plan = makePlan(mode, args);
    if (plan.version) {
      process.stdout.write(`${plan.version}\n`);
      return;
    }
    // In a container, the node (its GPU) is what the NVIDIA hook gave it: nothing without --gpus.
    if (nodeRoot() === null) {
      throw c.pyExit(
        plan.where,
        "RuntimeError",
        "Failed to infer device type: no GPU visible in the container (docker run without --gpus)",
      );
    }
    b = c.behaviour();
  } catch (err) {
    if (err instanceof c.EngineExit) {
      (err.code === 0 ? process.stdout : process.stderr).write(err.message);
      process.exitCode = err.code;
      return;
    }
    throw err;
  }
  run(plan, b).catch((err) => {
    process.stderr.write(`fake-engine: ${err && err.stack ? err.stack : err}\n`);
    process.exit(1);
  });
}

main();
