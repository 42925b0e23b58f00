"use strict";
// The container store of one simulated node: <root>/var/docker/containers/<id>/
// config.json (what `run` decided), state.json (what the supervisor saw), a
// json-file log like docker's. Names are reserved atomically by mkdir.
const fs = require("node:fs");
const path = require("node:path");
const { alive, sleep } = require("../lib/proc");

class DaemonError extends Error {
  constructor(message, code) {
    super(message);
    this.exitCode = code === undefined ? 1 : code;
  }
}

/**
 * Thrown, before anything changed, by a command that would wait (rm -f of a running container)
 * when it was asked to finish at once: the daemon then leaves it to the CLI's own process.
 */
class WouldWait extends Error {}

function nodeRoot() {
  const root = process.env.SIM_NODE_ROOT;
  if (!root || !fs.existsSync(root)) {
    throw new DaemonError("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?");
  }
  return root;
}

const containersDir = () => path.join(nodeRoot(), "var", "docker", "containers");
const namesDir = () => path.join(nodeRoot(), "var", "docker", "names");

function readJson(file, fallback) {
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return fallback;
  }
}

function writeJson(file, value) {
  const tmp = `${file}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, JSON.stringify(value, null, 2) + "\n");
  fs.renameSync(tmp, file);
}

/** RFC 3339 with nanoseconds, as the docker daemon prints times. */
function isoNano(date) {
  const d = date || new Date();
  const ns = String(process.hrtime.bigint() % 1000000n).padStart(6, "0");
  return d.toISOString().replace(/\.(\d{3})Z$/, `.$1${ns}Z`);
}

function load(dir) {
  const config = readJson(path.join(dir, "config.json"), null);
  if (!config) return null;
  const state = readJson(path.join(dir, "state.json"), { Status: "created" });
  return { dir, config, state };
}

function list() {
  let ids;
  try {
    ids = fs.readdirSync(containersDir());
  } catch {
    return [];
  }
  const out = [];
  for (const id of ids) {
    const c = load(path.join(containersDir(), id));
    if (c) out.push(refresh(c));
  }
  return out.sort((a, b) => (a.config.Created < b.config.Created ? 1 : -1));
}

/** Derive the live state: a "running" container whose process died is exited. */
function refresh(c) {
  if (c.state.Status !== "running") return c;
  if (alive(c.state.Pid, c.state.PidStart)) return c;
  for (let i = 0; i < 20 && alive(c.state.SupervisorPid, c.state.SupervisorStart); i++) {
    sleep(50);
    c.state = readJson(path.join(c.dir, "state.json"), c.state);
    if (c.state.Status !== "running") return c;
  }
  if (c.state.Status === "running") {
    c.state = { ...c.state, Status: "exited", Running: false, Pid: 0, ExitCode: 137, FinishedAt: isoNano() };
    writeJson(path.join(c.dir, "state.json"), c.state);
  }
  return c;
}

function find(ref) {
  const all = list();
  const name = ref.startsWith("/") ? ref.slice(1) : ref;
  const byName = all.find((c) => c.config.Name === `/${name}`);
  if (byName) return byName;
  const byId = all.filter((c) => c.config.Id.startsWith(ref));
  if (byId.length > 1) throw new DaemonError(`Error response from daemon: multiple IDs found with provided prefix: ${ref}`);
  return byId[0] || null;
}

function mustFind(ref) {
  const c = find(ref);
  if (!c) throw new DaemonError(`Error response from daemon: No such container: ${ref}`);
  return c;
}

/** Reserve a name for id; returns null, or the id of the container holding it. */
function reserveName(name, id) {
  const dir = path.join(namesDir(), name);
  fs.mkdirSync(namesDir(), { recursive: true });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      fs.mkdirSync(dir);
      fs.writeFileSync(path.join(dir, "id"), id);
      return null;
    } catch {
      let holder;
      try {
        holder = fs.readFileSync(path.join(dir, "id"), "utf8");
      } catch {
        sleep(20); // the holder is between mkdir and writing its id
        holder = fs.existsSync(path.join(dir, "id")) ? fs.readFileSync(path.join(dir, "id"), "utf8") : "";
      }
      if (holder && fs.existsSync(path.join(containersDir(), holder))) return holder;
      fs.rmSync(dir, { recursive: true, force: true }); // left behind by a removed container
    }
  }
  return "unknown";
}

function remove(c) {
  fs.rmSync(c.dir, { recursive: true, force: true });
  fs.rmSync(path.join(namesDir(), c.config.Name.slice(1)), { recursive: true, force: true });
}

/** docker's units.HumanDuration */
function humanDuration(ms) {
  const seconds = Math.floor(ms / 1000);
  if (seconds < 1) return "Less than a second";
  if (seconds === 1) return "1 second";
  if (seconds < 60) return `${seconds} seconds`;
  const minutes = Math.floor(seconds / 60);
  if (minutes === 1) return "About a minute";
  if (minutes < 60) return `${minutes} minutes`;
  const hours = Math.round(ms / 3600000);
  if (hours === 1) return "About an hour";
  if (hours < 48) return `${hours} hours`;
  if (hours < 24 * 7 * 2) return `${Math.floor(hours / 24)} days`;
  if (hours < 24 * 30 * 2) return `${Math.floor(hours / 24 / 7)} weeks`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24 / 30)} months`;
  return `${Math.floor(hours / 24 / 365)} years`;
}

function statusText(c) {
  const now = Date.now();
  const s = c.state;
  if (s.Status === "running") return `Up ${humanDuration(now - Date.parse(s.StartedAt))}`;
  if (s.Status === "exited") return `Exited (${s.ExitCode}) ${humanDuration(now - Date.parse(s.FinishedAt))} ago`;
  return "Created";
}

module.exports = {
  DaemonError, WouldWait, nodeRoot, containersDir, readJson, writeJson, isoNano, load, list, refresh,
  find, mustFind, reserveName, remove, humanDuration, statusText,
};
