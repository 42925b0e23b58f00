"use strict";
// The "containerd-shim" of the simulated docker: runs detached in its own session,
// starts the container process in a new session/process group, writes its
// stdout/stderr as docker json-file log lines, and records the exit.
// Usage (internal): node supervise.js <container dir>
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { spawn } = require("node:child_process");
const store = require("./store");
const { register, unregister, startOf, signal } = require("../lib/proc");

const dir = process.argv[2];
const config = store.readJson(path.join(dir, "config.json"), null);
if (!config) process.exit(2);
const statePath = path.join(dir, "state.json");
const setState = (patch) => {
  try {
    store.writeJson(statePath, { ...store.readJson(statePath, {}), ...patch });
  } catch {
    // the container was removed meanwhile (docker rm -f)
  }
};

for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"]) process.on(sig, () => {});
register(process.pid, `docker-supervisor ${config.Name}`);

const logFd = fs.openSync(config.Sim.log, "a");
const pending = { stdout: "", stderr: "" };
function writeLines(stream, text, flush) {
  const all = pending[stream] + text;
  const parts = all.split("\n");
  pending[stream] = flush ? "" : parts.pop();
  const lines = flush && parts[parts.length - 1] === "" ? parts.slice(0, -1) : parts;
  let out = "";
  for (const line of lines) out += JSON.stringify({ log: `${line}\n`, stream, time: store.isoNano() }) + "\n";
  if (out) fs.writeSync(logFd, out);
}

const child = spawn(config.Sim.argv[0], config.Sim.argv.slice(1), {
  cwd: config.Sim.cwd,
  env: config.Sim.env,
  detached: true,
  stdio: ["ignore", "pipe", "pipe"],
});
child.stdout.setEncoding("utf8").on("data", (d) => writeLines("stdout", d, false));
child.stderr.setEncoding("utf8").on("data", (d) => writeLines("stderr", d, false));

child.on("error", (err) => {
  setState({ Status: "created", ExitCode: 127, Error: String(err.message), Pid: 0 });
  unregister(process.pid);
  process.exit(0);
});

child.on("spawn", () => {
  register(child.pid, `container ${config.Name}`);
  setState({
    Status: "running",
    Running: true,
    Pid: child.pid,
    PidStart: startOf(child.pid),
    SupervisorPid: process.pid,
    SupervisorStart: startOf(process.pid),
    StartedAt: store.isoNano(),
    FinishedAt: "0001-01-01T00:00:00Z",
    ExitCode: 0,
  });
});

let exitCode = null;
child.on("exit", (code, sig) => {
  exitCode = code !== null ? code : 128 + (os.constants.signals[sig] || 9);
  // The container's other processes die with its init (pid namespace teardown).
  signal(child.pid, "SIGKILL", true);
  setTimeout(finish, 1000).unref();
});
child.on("close", () => finish());

let finished = false;
function finish() {
  if (finished || exitCode === null) return;
  finished = true;
  writeLines("stdout", "", true);
  writeLines("stderr", "", true);
  fs.closeSync(logFd);
  setState({ Status: "exited", Running: false, Pid: 0, ExitCode: exitCode, FinishedAt: store.isoNano() });
  unregister(child.pid);
  unregister(process.pid);
  if (config.HostConfig.AutoRemove && !config.Sim.foreground) store.remove(store.load(dir));
  process.exit(0);
}
