"use strict";
// Validation of `docker run` option values, with the daemon's messages.
const fs = require("node:fs");
const { DaemonError } = require("./store");
const { UsageError } = require("./args");

function parseVolumes(specs) {
  const mounts = [];
  for (const spec of specs) {
    const parts = spec.split(":");
    if (parts.length < 2 || parts.length > 3 || parts.some((p) => p === "")) {
      throw new DaemonError(`docker: Error response from daemon: invalid volume specification: '${spec}'`, 125);
    }
    const [src, dst, mode = ""] = parts;
    if (!src.startsWith("/")) {
      throw new DaemonError(`docker: named volumes are not simulated by the test site (volume "${src}" in '${spec}'); bind-mount an absolute host path`, 125);
    }
    if (!dst.startsWith("/")) {
      throw new DaemonError(`docker: Error response from daemon: invalid volume specification: '${spec}': invalid mount config for type "bind": invalid mount path: '${dst}' mount path must be absolute`, 125);
    }
    const modes = mode === "" ? [] : mode.split(",");
    for (const m of modes) {
      if (!["ro", "rw", "z", "Z"].includes(m)) throw new DaemonError(`docker: Error response from daemon: invalid mode: ${m}`, 125);
    }
    if (!fs.existsSync(src)) {
      throw new DaemonError(`docker: Error response from daemon: invalid mount config for type "bind": bind source path does not exist: ${src}`, 125);
    }
    if (mounts.some((m) => m.Destination === dst)) throw new DaemonError(`docker: Error response from daemon: Duplicate mount point: ${dst}`, 125);
    mounts.push({ Type: "bind", Source: src, Destination: dst, Mode: mode, RW: !modes.includes("ro"), Propagation: "rprivate" });
  }
  return mounts;
}

function parseEnv(specs) {
  const map = {};
  const list = [];
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const key = eq >= 0 ? spec.slice(0, eq) : spec;
    if (key === "") throw new UsageError(`invalid argument "${spec}" for "-e, --env" flag: invalid environment variable: ${spec}`, "run");
    if (eq < 0 && process.env[key] === undefined) continue; // `-e K` passes K through only when set
    const value = eq >= 0 ? spec.slice(eq + 1) : process.env[key];
    if (key in map) list.splice(list.findIndex((l) => l.startsWith(`${key}=`)), 1);
    map[key] = value;
    list.push(`${key}=${value}`);
  }
  return { map, list };
}

/**
 * `--env-file FILE`: docker reads KEY=value lines as they are (no quote stripping, no expansion),
 * skips blank lines and `#` comments, and passes a bare KEY through from its own environment.
 */
function parseEnvFiles(files) {
  const specs = [];
  for (const file of files) {
    let text;
    try {
      text = require("node:fs").readFileSync(file, "utf8");
    } catch {
      throw new UsageError(`open ${file}: no such file or directory`, "run");
    }
    for (const raw of text.split("\n")) {
      const line = raw.replace(/^\s+/, "");
      if (line === "" || line.startsWith("#")) continue;
      if (/\s/.test(line.split("=")[0])) throw new UsageError(`variable '${line.split("=")[0]}' contains whitespaces`, "run");
      specs.push(line);
    }
  }
  return specs;
}

function parseLabels(specs) {
  const labels = {};
  for (const spec of specs) {
    const eq = spec.indexOf("=");
    const key = eq >= 0 ? spec.slice(0, eq) : spec;
    if (key === "") throw new UsageError(`invalid argument "${spec}" for "-l, --label" flag: invalid label format: "${spec}"`, "run");
    labels[key] = eq >= 0 ? spec.slice(eq + 1) : "";
  }
  return labels;
}

function parseSize(flag, v) {
  const m = /^(\d+(?:\.\d+)?)\s*([kmgt]?)b?$/i.exec(v);
  if (!m) throw new UsageError(`invalid argument "${v}" for "--${flag}" flag: invalid size: '${v}'`, "run");
  const mult = { "": 1, k: 1024, m: 1024 ** 2, g: 1024 ** 3, t: 1024 ** 4 }[m[2].toLowerCase()];
  return Math.round(Number(m[1]) * mult);
}

const ULIMITS = ["core", "cpu", "data", "fsize", "locks", "memlock", "msgqueue", "nice", "nofile", "nproc", "rss", "rtprio", "rttime", "sigpending", "stack"];

/** --network, --ipc, --gpus, --shm-size, --restart, --ulimit, --privileged -> HostConfig. */
function checkHostOptions(opts) {
  if (opts.net !== undefined && opts.network !== undefined) {
    throw new UsageError("conflicting options: --net and --network (use only --network)", "run");
  }
  const net = opts.network !== undefined ? opts.network : opts.net !== undefined ? opts.net : "default";
  if (!["host", "bridge", "default", "none"].includes(net)) throw new DaemonError(`docker: Error response from daemon: network ${net} not found.`, 125);
  const ipc = opts.ipc !== undefined ? opts.ipc : "private";
  if (!["host", "private", "shareable", "none"].includes(ipc)) throw new DaemonError(`docker: Error response from daemon: invalid IPC mode: ${ipc}`, 125);
  if (opts.gpus !== undefined && !/^(all|\d+|"?device=[\d,]+"?)$/.test(opts.gpus)) {
    throw new UsageError(`invalid argument "${opts.gpus}" for "--gpus" flag: unexpected value "${opts.gpus}"`, "run");
  }
  const restart = opts.restart !== undefined ? opts.restart : "no";
  if (/^(always|unless-stopped|on-failure(:\d+)?)$/.test(restart)) {
    throw new DaemonError(`docker: --restart=${restart} is not simulated by the test site (only "no")`, 125);
  }
  if (restart !== "no") throw new UsageError(`invalid argument "${restart}" for "--restart" flag: invalid restart policy format`, "run");
  const ulimits = (opts.ulimit || []).map((u) => {
    const m = /^([a-z]+)=(-?\d+)(?::(-?\d+))?$/.exec(u);
    if (!m || !ULIMITS.includes(m[1])) throw new UsageError(`invalid argument "${u}" for "--ulimit" flag: invalid ulimit argument: ${u}`, "run");
    return { Name: m[1], Soft: Number(m[2]), Hard: Number(m[3] !== undefined ? m[3] : m[2]) };
  });
  return {
    network: net === "host" ? "host" : net === "none" ? "none" : "bridge",
    hostConfig: {
      NetworkMode: net,
      IpcMode: ipc,
      ShmSize: opts["shm-size"] !== undefined ? parseSize("shm-size", opts["shm-size"]) : 67108864,
      RestartPolicy: { Name: "no", MaximumRetryCount: 0 },
      Privileged: Boolean(opts.privileged),
      Ulimits: ulimits.length > 0 ? ulimits : null,
      DeviceRequests: opts.gpus !== undefined ? [{ Driver: "", Count: opts.gpus === "all" ? -1 : Number(opts.gpus) || 0, DeviceIDs: null, Capabilities: [["gpu"]], Options: {} }] : null,
    },
  };
}

module.exports = {
  parseEnvFiles, parseVolumes, parseEnv, parseLabels, checkHostOptions };
