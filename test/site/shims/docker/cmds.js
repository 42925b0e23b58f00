"use strict";
// docker ps | inspect | stop | kill | rm | wait | image inspect | images | version
const os = require("node:os");
const store = require("./store");
const { DaemonError } = store;
const { parseFlags, UsageError } = require("./args");
const { compile } = require("./template");
const { psRow, headerRow, tabulate, inspectView } = require("./views");
const { imageInspect } = require("./images");
const { alive, signal, sleep } = require("../lib/proc");

const STATUSES = ["created", "restarting", "running", "removing", "paused", "exited", "dead"];

function matchFilters(c, filters) {
  const groups = {};
  for (const f of filters) {
    const eq = f.indexOf("=");
    if (eq <= 0) throw new DaemonError(`Error response from daemon: invalid filter '${f}'`);
    const key = f.slice(0, eq);
    if (!["label", "name", "id", "status", "ancestor"].includes(key)) throw new DaemonError(`Error response from daemon: invalid filter '${key}'`);
    (groups[key] = groups[key] || []).push(f.slice(eq + 1));
  }
  const labels = c.config.Config.Labels || {};
  const name = c.config.Name.slice(1);
  const checks = {
    // every label filter must hold; values of other keys are alternatives
    label: (vs) => vs.every((v) => {
      const eq = v.indexOf("=");
      return eq < 0 ? v in labels : labels[v.slice(0, eq)] === v.slice(eq + 1);
    }),
    name: (vs) => vs.some((v) => new RegExp(v).test(`/${name}`) || new RegExp(v).test(name)),
    id: (vs) => vs.some((v) => c.config.Id.startsWith(v)),
    status: (vs) => vs.some((v) => {
      if (!STATUSES.includes(v)) throw new DaemonError(`Error response from daemon: invalid filter 'status=${v}'`);
      return c.state.Status === v;
    }),
    ancestor: (vs) => vs.some((v) => c.config.Config.Image === v || c.config.ImageRef === v),
  };
  return Object.entries(groups).every(([k, vs]) => checks[k](vs));
}

function psCommand(argv) {
  const { opts, args } = parseFlags("ps", argv, [
    { long: "all", short: "a", kind: "bool" },
    { long: "quiet", short: "q", kind: "bool" },
    { long: "filter", short: "f", kind: "list" },
    { long: "format", kind: "string" },
    { long: "no-trunc", kind: "bool" },
    { long: "last", short: "n", kind: "int" },
    { long: "latest", short: "l", kind: "bool" },
    { long: "size", short: "s", kind: "bool", unsupported: "no image layers" },
  ], true);
  if (args.length > 0) throw new UsageError(`"docker ps" accepts no arguments.`, "ps");
  const filters = opts.filter || [];
  const all = opts.all || opts.last !== undefined || opts.latest || filters.some((f) => f.startsWith("status="));
  let rows = store.list().filter((c) => (all || c.state.Status === "running") && matchFilters(c, filters));
  if (opts.latest) rows = rows.slice(0, 1);
  if (opts.last !== undefined && opts.last >= 0) rows = rows.slice(0, opts.last);
  const views = rows.map((c) => psRow(c, opts["no-trunc"]));
  if (opts.quiet) {
    for (const v of views) process.stdout.write(`${v.ID}\n`);
    return 0;
  }
  let fmt = opts.format !== undefined ? opts.format : "table {{.ID}}\t{{.Image}}\t{{.Command}}\t{{.RunningFor}}\t{{.Status}}\t{{.Ports}}\t{{.Names}}";
  if (fmt === "json") fmt = "{{json .}}";
  fmt = fmt.split("\\t").join("\t"); // docker turns a literal \t into a tab (column separator)
  const table = fmt.startsWith("table");
  const tpl = compile(table ? fmt.replace(/^table\s*/, "") : fmt);
  const lines = views.map((v) => tpl(v));
  if (table) {
    const header = tpl(headerRow());
    process.stdout.write(`${tabulate([header, ...lines])}\n`);
  } else {
    for (const l of lines) process.stdout.write(`${l}\n`);
  }
  return 0;
}

function inspectCommand(argv, forceType) {
  const { opts, args } = parseFlags("inspect", argv, [
    { long: "format", short: "f", kind: "string" },
    { long: "type", kind: "string" },
    { long: "size", short: "s", kind: "bool" },
  ], true);
  if (args.length === 0) throw new UsageError(`"docker inspect" requires at least 1 argument.`, "inspect");
  const type = forceType || opts.type;
  if (type !== undefined && !["container", "image"].includes(type)) throw new UsageError(`"${type}" is not a valid value for --type`, "inspect");
  const found = [];
  const missing = [];
  const root = store.nodeRoot();
  for (const ref of args) {
    const c = type === "image" ? null : store.find(ref);
    if (c) {
      found.push(inspectView(c));
      continue;
    }
    const img = type === "container" ? { found: [] } : imageInspect(root, [ref]);
    if (img.found.length > 0) found.push(img.found[0]);
    else missing.push(ref);
  }
  if (opts.format !== undefined) {
    const tpl = compile(opts.format);
    for (const v of found) process.stdout.write(`${tpl(v)}\n`);
  } else {
    process.stdout.write(`${JSON.stringify(found, null, 4)}\n`);
  }
  const what = type === "image" ? "image" : type === "container" ? "container" : "object";
  for (const m of missing) process.stderr.write(`Error: No such ${what}: ${m}\n`);
  return missing.length > 0 ? 1 : 0;
}

/** Signal the container's process group, wait for it, escalate to SIGKILL. */
function stopOne(c, sig, timeoutS) {
  if (c.state.Status !== "running") return;
  const pid = c.state.Pid;
  signal(pid, sig, true);
  const deadline = Date.now() + timeoutS * 1000;
  while (alive(pid, c.state.PidStart) && Date.now() < deadline) sleep(50);
  if (alive(pid, c.state.PidStart)) signal(pid, "SIGKILL", true);
  for (let i = 0; i < 60 && store.refresh(store.load(c.dir) || c).state.Status === "running"; i++) sleep(50);
}

function eachContainer(args, cmd, fn, forgiveMissing) {
  if (args.length === 0) throw new UsageError(`"docker ${cmd}" requires at least 1 argument.`, cmd);
  let failed = false;
  for (const ref of args) {
    try {
      fn(store.mustFind(ref), ref);
      process.stdout.write(`${ref}\n`);
    } catch (err) {
      if (!(err instanceof DaemonError)) throw err;
      process.stderr.write(`${err.message}\n`);
      if (!(forgiveMissing && /No such container/.test(err.message))) failed = true;
    }
  }
  return failed ? 1 : 0;
}

function stopCommand(argv) {
  const { opts, args } = parseFlags("stop", argv, [
    { long: "time", short: "t", kind: "int" },
    { long: "signal", short: "s", kind: "string" },
  ], true);
  const sig = opts.signal !== undefined ? normalizeSignal(opts.signal) : "SIGTERM";
  return eachContainer(args, "stop", (c) => stopOne(c, sig, opts.time !== undefined ? opts.time : 10));
}

function normalizeSignal(s) {
  const name = /^\d+$/.test(s) ? Object.keys(os.constants.signals).find((k) => os.constants.signals[k] === Number(s)) : `SIG${s.toUpperCase().replace(/^SIG/, "")}`;
  if (!name || !(name in os.constants.signals)) throw new DaemonError(`Error response from daemon: Invalid signal: ${s}`);
  return name;
}

function killCommand(argv) {
  const { opts, args } = parseFlags("kill", argv, [{ long: "signal", short: "s", kind: "string" }], true);
  const sig = opts.signal !== undefined ? normalizeSignal(opts.signal) : "SIGKILL";
  return eachContainer(args, "kill", (c) => {
    if (c.state.Status !== "running") throw new DaemonError(`Error response from daemon: cannot kill container: ${c.config.Name.slice(1)}: container ${c.config.Id} is not running`);
    signal(c.state.Pid, sig, true);
    for (let i = 0; i < 40 && sig === "SIGKILL" && store.refresh(store.load(c.dir) || c).state.Status === "running"; i++) sleep(50);
  });
}

function rmCommand(argv, atOnce) {
  const { opts, args } = parseFlags("rm", argv, [
    { long: "force", short: "f", kind: "bool" },
    { long: "volumes", short: "v", kind: "bool" },
    { long: "link", short: "l", kind: "bool", unsupported: "no links" },
  ], true);
  // Removing a running container (-f) waits for it to die: not at once.
  if (atOnce && opts.force && args.some((ref) => store.find(ref)?.state.Status === "running")) throw new store.WouldWait();
  return eachContainer(args, "rm", (c) => {
    if (c.state.Status === "running") {
      if (!opts.force) {
        throw new DaemonError(`Error response from daemon: cannot remove container "${c.config.Name}": container is running: stop the container before removing or force remove`);
      }
      stopOne(c, "SIGKILL", 0);
    }
    store.remove(store.load(c.dir) || c);
  }, Boolean(opts.force));
}

function waitCommand(argv) {
  const { args } = parseFlags("wait", argv, [], true);
  if (args.length === 0) throw new UsageError(`"docker wait" requires at least 1 argument.`, "wait");
  let rc = 0;
  for (const ref of args) {
    let c = store.mustFind(ref);
    while (c.state.Status === "running") {
      sleep(100);
      c = store.refresh(store.load(c.dir) || c);
    }
    process.stdout.write(`${c.state.ExitCode || 0}\n`);
    if (c.state.Status === "created") rc = 1;
  }
  return rc;
}

function versionCommand(argv) {
  const { opts } = parseFlags("version", argv, [{ long: "format", short: "f", kind: "string" }], true);
  const v = {
    Client: { Version: "28.3.3", ApiVersion: "1.51", Os: "linux", Arch: "arm64" },
    Server: { Version: "28.3.3", ApiVersion: "1.51", Os: "linux", Arch: "arm64", Platform: { Name: "Docker Engine - Community (test site)" } },
  };
  if (opts.format !== undefined) process.stdout.write(`${compile(opts.format)(v)}\n`);
  else process.stdout.write(`Client:\n Version:           ${v.Client.Version}\n\nServer: ${v.Server.Platform.Name}\n Engine:\n  Version:          ${v.Server.Version}\n`);
  return 0;
}

module.exports = { psCommand, inspectCommand, stopCommand, killCommand, rmCommand, waitCommand, versionCommand };
