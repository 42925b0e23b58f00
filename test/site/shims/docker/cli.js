"use strict";
// The test site's docker CLI: the subset of the docker CLI that sm121 calls, with containers as
// detached process trees on the simulated node ($SIM_NODE_ROOT). Unknown commands and flags fail
// like the real CLI (exit 125 for flag errors). ../docker.js runs it in a process of its own;
// ../dockerd.js answers the commands that finish at once with it (see ../docker-cli).
const { UsageError } = require("./args");
const { DaemonError } = require("./store");
const { TemplateError } = require("./template");
const cmds = require("./cmds");
const { imageInspect } = require("./images");
const store = require("./store");

const USAGE = `Usage:  docker [OPTIONS] COMMAND

Commands (test-site subset):
  run, ps, inspect, logs, stop, kill, rm, wait, pull, save, load, image inspect|pull|save|load, images, version
`;

function imagesCommand(argv) {
  if (argv.length > 0) throw new UsageError(`unknown flag: ${argv[0]}`, "images");
  const fs = require("node:fs");
  const path = require("node:path");
  let refs;
  try {
    refs = Object.keys(JSON.parse(fs.readFileSync(path.join(store.nodeRoot(), "etc", "docker-images.json"), "utf8")));
  } catch {
    refs = [];
  }
  const rows = imageInspect(store.nodeRoot(), refs).found;
  process.stdout.write("REPOSITORY   TAG   IMAGE ID\n");
  for (const r of rows) {
    const tag = r.RepoTags[0];
    const i = tag.lastIndexOf(":");
    process.stdout.write(`${tag.slice(0, i)}   ${tag.slice(i + 1)}   ${r.Id.slice(7, 19)}\n`);
  }
  return 0;
}

// run, logs and the image transfers load what only they need (child_process, crypto) when called:
// sm121 calls `docker inspect` on every node at every plan, and a real docker CLI starts in a few ms.
const COMMANDS = {
  run: (a) => require("./run").runCommand(a),
  ps: cmds.psCommand,
  inspect: (a) => cmds.inspectCommand(a),
  logs: (a) => require("./logs").logsCommand(a),
  stop: cmds.stopCommand,
  kill: cmds.killCommand,
  rm: cmds.rmCommand,
  wait: cmds.waitCommand,
  version: cmds.versionCommand,
  images: imagesCommand,
  pull: (a) => require("./transfer").pullCommand(a),
  save: (a) => require("./transfer").saveCommand(a),
  load: (a) => require("./transfer").loadCommand(a),
};

function dispatch(argv, atOnce) {
  const [cmd, ...rest] = argv;
  if (cmd === undefined || cmd === "--help" || cmd === "-h") {
    process.stdout.write(USAGE);
    return cmd === undefined ? 1 : 0;
  }
  if (cmd === "container") {
    const [sub, ...more] = rest;
    const map = { ls: "ps", list: "ps", ps: "ps", inspect: "inspect", logs: "logs", stop: "stop", kill: "kill", rm: "rm", run: "run", wait: "wait" };
    if (sub === "inspect") return cmds.inspectCommand(more, "container");
    if (sub && map[sub]) return COMMANDS[map[sub]](more, atOnce);
    throw new DaemonError(`docker: 'container ${sub}' is not a docker command.\nSee 'docker --help'`);
  }
  if (cmd === "image") {
    const [sub, ...more] = rest;
    if (sub === "inspect") return cmds.inspectCommand(more, "image");
    if (sub === "ls" || sub === "list") return imagesCommand(more);
    if (sub === "pull" || sub === "save" || sub === "load") return COMMANDS[sub](more);
    throw new DaemonError(`docker: 'image ${sub}' is not a docker command.\nSee 'docker --help'`);
  }
  const fn = COMMANDS[cmd];
  if (!fn) {
    if (cmd.startsWith("-")) throw new UsageError(`unknown flag: ${cmd}`, "");
    throw new DaemonError(`docker: '${cmd}' is not a docker command.\nSee 'docker --help'`);
  }
  return fn(rest, atOnce);
}

function fail(err) {
  if (err instanceof UsageError) {
    const sub = err.cmd ? ` ${err.cmd}` : "";
    process.stderr.write(`docker: ${err.message}\n\nRun 'docker${sub} --help' for more information\n`);
    return 125;
  }
  if (err instanceof DaemonError) {
    process.stderr.write(`${err.message}\n`);
    return err.exitCode;
  }
  if (err instanceof TemplateError) {
    process.stderr.write(`${err.message}\n`);
    return 1;
  }
  process.stderr.write(`docker (test site): internal error: ${err && err.stack ? err.stack : err}\n`);
  return 1;
}

/**
 * Runs one command line: its exit code, or a promise of it (run, logs -f, wait). `atOnce` (the
 * daemon): a command that would wait throws WouldWait instead, having changed nothing.
 */
function run(argv, atOnce = false) {
  let result;
  try {
    result = dispatch(argv, atOnce);
  } catch (err) {
    if (err instanceof store.WouldWait) throw err;
    return fail(err);
  }
  if (typeof result === "number") return result;
  return Promise.resolve(result).then((rc) => rc, fail);
}

module.exports = { run };
