"use strict";
// `docker run`: validate like the docker CLI/daemon, write the container config,
// start it under a detached supervisor (own session), print the id (-d) or
// attach to its output and exit with its code.
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { spawn } = require("node:child_process");
const { parseFlags, UsageError } = require("./args");
const store = require("./store");
const { DaemonError } = store;
const { resolveImage, imageId } = require("./images");
const { parseVolumes, parseEnv, parseEnvFiles, parseLabels, checkHostOptions } = require("./run-options");
const { followLogs } = require("./logs");
const { sleep } = require("../lib/proc");

const NOT_MODELLED = "the simulated site does not model it";
const RUN_FLAGS = [
  { long: "detach", short: "d", kind: "bool" },
  { long: "name", kind: "string" },
  { long: "label", short: "l", kind: "list" },
  { long: "env", short: "e", kind: "list" },
  { long: "volume", short: "v", kind: "list" },
  { long: "network", kind: "string" },
  { long: "net", kind: "string" },
  { long: "gpus", kind: "string" },
  { long: "ipc", kind: "string" },
  { long: "shm-size", kind: "string" },
  { long: "entrypoint", kind: "string" },
  { long: "restart", kind: "string" },
  { long: "rm", kind: "bool" },
  { long: "ulimit", kind: "list" },
  { long: "workdir", short: "w", kind: "string" },
  { long: "privileged", kind: "bool" },
  { long: "env-file", kind: "list" },
  ...["interactive:i", "tty:t", "init", "read-only"].map((s) => {
    const [long, short] = s.split(":");
    return { long, short, kind: "bool", unsupported: NOT_MODELLED };
  }),
  ...["publish:p", "mount", "user:u", "label-file", "device", "runtime", "hostname:h", "cap-add",
    "security-opt", "cpus", "memory:m", "pull", "platform", "pid", "uts", "add-host", "tmpfs", "log-driver",
    "log-opt", "stop-signal", "stop-timeout", "health-cmd", "cidfile"].map((s) => {
    const [long, short] = s.split(":");
    return { long, short, kind: "string", unsupported: NOT_MODELLED };
  }),
];

const ADJ = ["admiring", "bold", "brave", "clever", "eager", "focused", "gifted", "happy", "jolly", "keen", "lucid", "modest"];
const NOUN = ["turing", "hopper", "lovelace", "curie", "noether", "shannon", "dijkstra", "knuth", "ritchie", "thompson"];
const pick = (a) => a[crypto.randomInt(a.length)];

function containerPath(root) {
  return [path.join(root, "bin"), path.dirname(process.execPath), "/usr/bin", "/bin"];
}

/** Map a path of the image filesystem onto the node: /opt/... lives under <root>/opt. */
function imagePath(root, p) {
  return p === "/opt" || p.startsWith("/opt/") ? path.join(root, p) : p;
}

function resolveExecutable(root, cmd) {
  const isExec = (p) => {
    try {
      fs.accessSync(p, fs.constants.X_OK);
      return fs.statSync(p).isFile();
    } catch {
      return false;
    }
  };
  if (cmd.includes("/")) {
    const p = imagePath(root, cmd);
    return isExec(p) ? p : { error: `exec: "${cmd}": stat ${cmd}: no such file or directory` };
  }
  for (const dir of containerPath(root)) {
    if (isExec(path.join(dir, cmd))) return path.join(dir, cmd);
  }
  return { error: `exec: "${cmd}": executable file not found in $PATH` };
}

function runCommand(argv) {
  const { opts, args } = parseFlags("run", argv, RUN_FLAGS, false);
  if (args.length === 0) throw new UsageError('"docker run" requires at least 1 argument.', "run");
  const root = store.nodeRoot();
  const [imageRef, ...cmdArgs] = args;
  const image = resolveImage(root, imageRef);
  const host = checkHostOptions(opts);
  const mounts = parseVolumes(opts.volume || []);
  // Like docker: --env-file entries first, then -e, later ones winning.
  const userEnv = parseEnv([...parseEnvFiles(opts["env-file"] || []), ...(opts.env || [])]);
  const labels = parseLabels(opts.label || []);

  const id = crypto.randomBytes(32).toString("hex");
  const name = opts.name !== undefined ? opts.name.replace(/^\//, "") : `${pick(ADJ)}_${pick(NOUN)}`;
  if (!/^[a-zA-Z0-9][a-zA-Z0-9_.-]+$/.test(name)) {
    throw new DaemonError(`docker: Error response from daemon: Invalid container name (${name}), only [a-zA-Z0-9][a-zA-Z0-9_.-] are allowed.`, 125);
  }
  const entrypoint = opts.entrypoint !== undefined ? (opts.entrypoint === "" ? [] : [opts.entrypoint]) : image.entrypoint || [];
  const cmd = cmdArgs.length > 0 ? cmdArgs : opts.entrypoint !== undefined ? [] : image.cmd || [];
  const full = [...entrypoint, ...cmd];
  if (full.length === 0) throw new DaemonError("docker: Error response from daemon: No command specified.", 125);

  const holder = store.reserveName(name, id);
  if (holder) {
    throw new DaemonError(
      `docker: Error response from daemon: Conflict. The container name "/${name}" is already in use by container "${holder}". You have to remove (or rename) that container to be able to reuse that name.`,
      125,
    );
  }
  const dir = path.join(store.containersDir(), id);
  fs.mkdirSync(path.join(dir, "home"), { recursive: true });
  const workdir = opts.workdir ? imagePath(root, opts.workdir) : path.join(dir, "rootfs");
  if (!opts.workdir) fs.mkdirSync(workdir, { recursive: true });
  const pathVar = containerPath(root).join(":");
  const runtimeEnv = {
    ...userEnv.map,
    PATH: pathVar,
    HOSTNAME: id.slice(0, 12),
    HOME: path.join(dir, "home"),
    SIM_NODE_ROOT: root,
    SIM_NODE_NAME: process.env.SIM_NODE_NAME || "",
    SIM_NODE_IP: process.env.SIM_NODE_IP || "",
    SIM_SITE_DIR: process.env.SIM_SITE_DIR || "",
    SIM_CONTAINER_ID: id,
    SIM_CONTAINER_DIR: dir,
    SIM_NETWORK: host.network,
  };
  if (opts.gpus) runtimeEnv.SIM_GPUS = opts.gpus;
  // The site's Node.js compile cache (see site.ts) for the fake engine's start: the simulation's,
  // not the container's (docker inspect shows Config.Env, which has no such key).
  if (process.env.NODE_COMPILE_CACHE) runtimeEnv.NODE_COMPILE_CACHE = process.env.NODE_COMPILE_CACHE;
  const exe = resolveExecutable(root, full[0]);
  const config = {
    Id: id,
    Name: `/${name}`,
    Created: store.isoNano(),
    Path: full[0],
    Args: full.slice(1),
    Image: imageId(image.ref, image),
    ImageRef: image.ref,
    Config: {
      Hostname: id.slice(0, 12),
      Env: [...userEnv.list, `PATH=${pathVar}`],
      Cmd: cmd.length > 0 ? cmd : null,
      Entrypoint: entrypoint.length > 0 ? entrypoint : null,
      Image: imageRef,
      Labels: labels,
      WorkingDir: opts.workdir || "",
    },
    HostConfig: { ...host.hostConfig, AutoRemove: Boolean(opts.rm), Binds: opts.volume || null },
    Mounts: mounts,
    Sim: {
      argv: typeof exe === "string" ? [exe, ...full.slice(1).map((a) => imagePath(root, a))] : null,
      env: runtimeEnv,
      cwd: workdir,
      log: path.join(dir, `${id}-json.log`),
      foreground: !opts.detach,
    },
  };
  store.writeJson(path.join(dir, "config.json"), config);
  if (typeof exe !== "string") {
    store.writeJson(path.join(dir, "state.json"), { Status: "created", ExitCode: 127, Error: exe.error, Pid: 0 });
    throw new DaemonError(
      `docker: Error response from daemon: failed to create task for container: failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: error during container init: ${exe.error}: unknown`,
      127,
    );
  }
  store.writeJson(path.join(dir, "state.json"), { Status: "created", Pid: 0, ExitCode: 0 });
  const sup = spawn(process.execPath, [path.join(__dirname, "supervise.js"), dir], { detached: true, stdio: "ignore" });
  sup.unref();
  // Until the supervisor has started the process (or failed to): up to 15 s.
  let state = null;
  for (let i = 0; i < 1500; i++) {
    state = store.readJson(path.join(dir, "state.json"), null);
    if (state && (state.Status !== "created" || state.Error)) break;
    sleep(10);
  }
  if (!state || state.Error || state.Status === "created") {
    throw new DaemonError(`docker: Error response from daemon: failed to start container ${id}: ${state && state.Error ? state.Error : "timeout"}`, 126);
  }
  if (opts.detach) {
    process.stdout.write(`${id}\n`);
    return Promise.resolve(0);
  }
  return followLogs(store.load(dir), { follow: true, tail: "all" }).then(() => {
    const c = store.refresh(store.load(dir));
    if (opts.rm) store.remove(c);
    return c.state.ExitCode;
  });
}

module.exports = { runCommand, imagePath };
