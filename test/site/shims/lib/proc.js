"use strict";
// Process helpers shared by the shims: liveness by pid + start time (pids are
// reused quickly on this machine), the site-wide registry of long-lived
// processes that SimSite.stop() kills, reading another process's environment
// and command line from /proc, and which node a process (or container) is of.
const fs = require("node:fs");
const path = require("node:path");

/** Fields of /proc/<pid>/stat we need, or null when the process is gone. */
function procStat(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  // The command name (field 2) may contain spaces and parentheses.
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0], ppid: Number(rest[1]), pgid: Number(rest[2]), start: rest[19] };
}

/** True when pid runs (not a zombie) and, if given, started at `start`. */
function alive(pid, start) {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  const st = procStat(pid);
  if (!st || st.state === "Z" || st.state === "X") return false;
  return start === undefined || start === null || st.start === String(start);
}

function startOf(pid) {
  const st = procStat(pid);
  return st ? st.start : null;
}

function readNulList(file) {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\0")
      .filter((s) => s.length > 0);
  } catch {
    return [];
  }
}

function environOf(pid) {
  const env = {};
  for (const kv of readNulList(`/proc/${pid}/environ`)) {
    const i = kv.indexOf("=");
    if (i > 0) env[kv.slice(0, i)] = kv.slice(i + 1);
  }
  return env;
}

function cmdlineOf(pid) {
  return readNulList(`/proc/${pid}/cmdline`);
}

function allPids() {
  return fs
    .readdirSync("/proc")
    .filter((n) => /^\d+$/.test(n))
    .map(Number);
}

/** The Docker container the process runs in: its cgroup is <parent>/<id> (docker's /docker/<id>); null if none. */
function containerOf(pid) {
  let text;
  try {
    text = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return null;
  }
  const m = /\/([0-9a-f]{64})$/m.exec(text);
  return m ? m[1] : null;
}

/**
 * Whether the process runs on the simulated node at `root`: started there (its SIM_NODE_ROOT), or
 * in a container of the node's own Docker Engine (whose data root holds that container).
 */
function onNode(pid, root) {
  if (environOf(pid).SIM_NODE_ROOT === root) return true;
  const id = containerOf(pid);
  return id !== null && fs.existsSync(path.join(root, "docker", "data", "containers", id));
}

/** Record a long-lived process so that stopping the site kills it. */
function register(pid, what) {
  const site = process.env.SIM_SITE_DIR;
  if (!site) return;
  const dir = path.join(site, "run", "procs");
  fs.mkdirSync(dir, { recursive: true });
  const rec = { pid, start: startOf(pid), what, node: process.env.SIM_NODE_NAME || null };
  fs.writeFileSync(path.join(dir, `${pid}.json`), JSON.stringify(rec) + "\n");
}

function unregister(pid) {
  const site = process.env.SIM_SITE_DIR;
  if (!site) return;
  fs.rmSync(path.join(site, "run", "procs", `${pid}.json`), { force: true });
}

/** Send a signal to a process group (or the pid alone), ignoring ESRCH. */
function signal(pid, sig, group) {
  try {
    process.kill(group ? -pid : pid, sig);
    return true;
  } catch {
    return false;
  }
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

module.exports = {
  procStat,
  alive,
  startOf,
  environOf,
  cmdlineOf,
  allPids,
  containerOf,
  onNode,
  register,
  unregister,
  signal,
  sleep,
};
