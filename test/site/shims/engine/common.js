"use strict";
// What every fake engine shares: the node it runs on, its behaviour file, the
// way a real engine fails at startup, and which address a bind really takes on
// the shared loopback.
const fs = require("node:fs");
const path = require("node:path");
const node = require("../lib/node");

/** A startup failure: text for stderr and the exit code of the real engine. */
class EngineExit extends Error {
  constructor(code, text) {
    super(text);
    this.code = code;
  }
}

function argparseExit(prog, usage, message) {
  return new EngineExit(2, `usage: ${usage}\n${prog}: error: ${message}\n`);
}

/** A Python exception at startup, as vLLM/SGLang print it. */
function pyExit(where, type, message) {
  return new EngineExit(
    1,
    `Traceback (most recent call last):\n  File "${where}", line 1, in <module>\n    main()\n${type}: ${message}\n`,
  );
}

function nodeRoot() {
  const r = node.nodeRoot();
  if (!r) throw new EngineExit(1, "fake-engine: not on a simulated node (no SIM_NODE_ROOT, no GPU view)\n");
  return r;
}

const nodeIp = node.nodeIp;

const BEHAVIOUR_DEFAULTS = {
  startDelayS: 0,
  mode: "ok",
  crashAfterS: 3,
  tokensPerSecond: 0,
  kvCacheTokens: null,
  ignoreSigterm: false,
  rendezvousTimeoutS: 120,
  metricValues: {},
};
// crash-after: crashAfterS after it became ready; crash-loading: crashAfterS after start, while loading;
// chat-never-answers: ready (/v1/models answers) but a completion never gets a byte back, as a
// server whose scheduler is wedged. hung: the same for an engine that already ran when the file
// was written (the file is read again for each completion): an engine that hangs after it served,
// as vLLM does on two Sparks after 35-55 minutes (vLLM #41725). Its process and its container keep
// running, it accepts connections and answers /v1/models; its counters stop moving. An engine
// started after the file was written (a restart) serves: a restart is what mends a hang.
const MODES = ["ok", "never-ready", "crash-after", "crash-loading", "exit-now", "chat-never-answers", "hung"];

/** <root>/etc/fake-engine.json, strictly: an unknown key or mode is an error. */
function behaviour() {
  const file = path.join(nodeRoot(), "etc", "fake-engine.json");
  let raw = {};
  if (fs.existsSync(file)) {
    try {
      raw = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (err) {
      throw new EngineExit(3, `fake-engine: ${file}: ${err.message}\n`);
    }
  }
  for (const k of Object.keys(raw)) {
    if (!(k in BEHAVIOUR_DEFAULTS))
      throw new EngineExit(
        3,
        `fake-engine: ${file}: unknown key "${k}" (known: ${Object.keys(BEHAVIOUR_DEFAULTS).join(", ")})\n`,
      );
  }
  const b = { ...BEHAVIOUR_DEFAULTS, ...raw };
  if (!MODES.includes(b.mode))
    throw new EngineExit(3, `fake-engine: ${file}: mode "${b.mode}" is not one of ${MODES.join(", ")}\n`);
  // metricValues: a series of /metrics and the text each of its samples prints as its value
  // ("NaN", "+Inf": what Prometheus' format allows and a broken counter shows).
  const values = b.metricValues;
  if (typeof values !== "object" || values === null || Object.values(values).some((v) => typeof v !== "string"))
    throw new EngineExit(3, `fake-engine: ${file}: metricValues maps a series' name to its value's text\n`);
  return b;
}

const STARTED_MS = Date.now();

/**
 * The mode in the behaviour file now, as a running engine sees it: "hung" only when the file was
 * written after this engine started; an unreadable file is "ok".
 */
function liveMode() {
  try {
    const mode = behaviour().mode;
    if (mode !== "hung") return mode;
    return fs.statSync(path.join(nodeRoot(), "etc", "fake-engine.json")).mtimeMs > STARTED_MS ? "hung" : "ok";
  } catch {
    return "ok";
  }
}

function proofs() {
  const file = path.join(nodeRoot(), "etc", "fake-engine-proofs.txt");
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "");
}

function hfHome() {
  if (process.env.HF_HOME) return process.env.HF_HOME;
  return path.join(process.env.HOME || "/nonexistent", ".cache", "huggingface");
}

/** A model id or path, checked as transformers would check it. */
function checkModel(where, model) {
  if (model.startsWith("/") || model.startsWith(".")) {
    if (!fs.existsSync(model) || !fs.statSync(model).isDirectory()) {
      throw pyExit(
        where,
        "OSError",
        `Incorrect path_or_model_id: '${model}'. Please provide either the path to a local folder ` +
          `or the repo_id of a model on the Hub.`,
      );
    }
    return;
  }
  if (!/^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/.test(model) || model.includes("--") || model.includes("..")) {
    throw pyExit(
      where,
      "huggingface_hub.errors.HFValidationError",
      `Repo id must use alphanumeric chars or '-', '_', '.', '--' and '..' are forbidden, ` +
        `'-' and '.' cannot start or end the name, max length is 96: '${model}'.`,
    );
  }
  if (process.env.HF_HUB_OFFLINE === "1") {
    const dir = path.join(hfHome(), "hub", `models--${model.replace(/\//g, "--")}`);
    if (!fs.existsSync(dir)) {
      throw pyExit(
        where,
        "OSError",
        `We couldn't connect to 'https://huggingface.co' to load the files, ` +
          `and couldn't find them in the cached files (HF_HUB_OFFLINE=1, looked in ${dir}).`,
      );
    }
  }
}

/**
 * The address a server really binds. The nodes share the machine's loopback, so
 * "all interfaces" means the node's own IP; 127.0.0.1 is shared by all nodes. (A
 * container without --network host binds it in a network namespace of its own,
 * where nothing outside reaches it, as a real engine's 0.0.0.0 there.)
 */
function bindAddress(where, host, port) {
  const ip = nodeIp();
  let addr;
  if (host === null || host === undefined || host === "" || host === "0.0.0.0" || host === "::") addr = ip;
  else if (host === "localhost" || host === "127.0.0.1" || host === "::1") addr = "127.0.0.1";
  else if (host === ip) addr = ip;
  else
    throw pyExit(
      where,
      "OSError",
      `[Errno 99] error while attempting to bind on address ('${host}', ${port}): cannot assign requested address`,
    );
  return addr;
}

/** The log timestamp formats of vLLM ("10-15 10:00:00") and SGLang ("2026-10-15 10:00:00"). */
function vllmTime() {
  const d = new Date().toISOString();
  return `${d.slice(5, 10)} ${d.slice(11, 19)}`;
}
function sglTime() {
  return new Date().toISOString().slice(0, 19).replace("T", " ");
}

const commas = (n) => Math.round(n).toLocaleString("en-US");

/** Deterministic KV cache size: scales with memory fraction, fp8 cache and world size. */
function kvTokens(b, fraction, fp8, world) {
  if (b.kvCacheTokens !== null && b.kvCacheTokens !== undefined) return b.kvCacheTokens;
  return Math.floor(fraction * 1371742) * (fp8 ? 2 : 1) * world;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

module.exports = {
  EngineExit,
  argparseExit,
  pyExit,
  nodeRoot,
  nodeIp,
  behaviour,
  liveMode,
  proofs,
  hfHome,
  checkModel,
  bindAddress,
  vllmTime,
  sglTime,
  commas,
  kvTokens,
  sleep,
};
