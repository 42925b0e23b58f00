"use strict";
// The kernel settings of a simulated node: <root>/etc/sysctl.json over defaults,
// with every write logged to <root>/var/log/sysctl.log. The machine's real
// kernel is never touched.
const fs = require("node:fs");
const path = require("node:path");
const node = require("./node");

const DEFAULTS = {
  "vm.watermark_scale_factor": "10",
  "vm.compaction_proactiveness": "20",
  "vm.swappiness": "60",
  "vm.min_free_kbytes": "67584",
  "vm.overcommit_memory": "0",
  "vm.dirty_ratio": "20",
  "kernel.numa_balancing": "0",
  "net.core.rmem_max": "212992",
  "net.core.wmem_max": "212992",
};
const WRITE_ONLY = ["vm.drop_caches"];

function root() {
  const r = node.nodeRoot();
  if (!r) throw new Error("SIM_NODE_ROOT is not set: not on a simulated node");
  return r;
}

function file() {
  return path.join(root(), "etc", "sysctl.json");
}

function readAll() {
  let over;
  try {
    over = JSON.parse(fs.readFileSync(file(), "utf8"));
  } catch {
    over = {};
  }
  const out = { ...DEFAULTS };
  for (const [k, v] of Object.entries(over)) out[k] = String(v);
  return out;
}

function normalizeKey(k) {
  return k.replace(/\//g, ".");
}

function known(key) {
  return key in readAll() || WRITE_ONLY.includes(key);
}

function log(line) {
  const dir = path.join(root(), "var", "log");
  fs.mkdirSync(dir, { recursive: true });
  fs.appendFileSync(path.join(dir, "sysctl.log"), `${new Date().toISOString()} ${line}\n`);
}

/** Apply a write (the caller checked privilege). */
function write(key, value) {
  const v = String(value).trim();
  if (key === "vm.drop_caches") {
    if (!["1", "2", "3"].includes(v)) throw new Error(`sysctl: setting key "vm.drop_caches": Invalid argument`);
    log(`vm.drop_caches=${v} (simulated: nothing dropped)`);
    return;
  }
  if (!/^-?\d+$/.test(v)) throw new Error(`sysctl: setting key "${key}": Invalid argument`);
  const all = readAll();
  let over;
  try {
    over = JSON.parse(fs.readFileSync(file(), "utf8"));
  } catch {
    over = {};
  }
  over[key] = v;
  fs.mkdirSync(path.dirname(file()), { recursive: true });
  fs.writeFileSync(file(), JSON.stringify(over, null, 2) + "\n");
  log(`${key}=${v} (was ${all[key]})`);
}

module.exports = { readAll, normalizeKey, known, write, WRITE_ONLY, root, log };
