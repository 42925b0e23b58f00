#!/usr/bin/env node
"use strict";
// The test site's sudo: only `sudo -n CMD [ARG...]` (non-interactive, as on a node
// with NOPASSWD). Runs CMD with SIM_SUDO=1 so the sysctl shim accepts writes.
// If <root>/etc/sudo-denied exists it fails as sudo -n does without NOPASSWD.
// Arguments that name /proc/sys/... are redirected to <root>/proc/sys/..., a copy
// of the node's settings; writes there are applied to the simulated settings
// (drop_caches is only logged), so the real kernel is never touched.
const fs = require("node:fs");
const path = require("node:path");
const os = require("node:os");
const { spawnSync } = require("node:child_process");
const sysctl = require("./lib/sysctl-state");

function denied() {
  process.stderr.write("sudo: a password is required\n");
  return 1;
}

function which(cmd) {
  if (cmd.includes("/")) return fs.existsSync(cmd) ? cmd : null;
  for (const dir of (process.env.PATH || "").split(":")) {
    const p = path.join(dir, cmd);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      continue;
    }
  }
  return null;
}

function keyFile(procRoot, key) {
  return path.join(procRoot, ...key.split("."));
}

function materialize(procRoot) {
  const before = sysctl.readAll();
  for (const [key, value] of Object.entries(before)) {
    fs.mkdirSync(path.dirname(keyFile(procRoot, key)), { recursive: true });
    fs.writeFileSync(keyFile(procRoot, key), `${value}\n`);
  }
  for (const key of sysctl.WRITE_ONLY) {
    fs.mkdirSync(path.dirname(keyFile(procRoot, key)), { recursive: true });
    fs.writeFileSync(keyFile(procRoot, key), "");
  }
  return before;
}

function reconcile(procRoot, before) {
  for (const key of [...Object.keys(before), ...sysctl.WRITE_ONLY]) {
    let now;
    try {
      now = fs.readFileSync(keyFile(procRoot, key), "utf8").trim();
    } catch {
      continue;
    }
    const changed = sysctl.WRITE_ONLY.includes(key) ? now !== "" : now !== before[key];
    if (!changed) continue;
    try {
      sysctl.write(key, now);
    } catch (err) {
      process.stderr.write(`${err.message}\n`);
    }
  }
}

function main(argv) {
  let i = 0;
  if (argv[i] !== "-n") return denied();
  i++;
  if (argv[i] === "--") i++;
  if (i < argv.length && argv[i].startsWith("-")) return denied();
  const cmd = argv.slice(i);
  if (cmd.length === 0) {
    process.stderr.write("usage: sudo -h | -K | -k | -V\nusage: sudo [-n] command [arg ...]\n");
    return 1;
  }
  const root = sysctl.root();
  if (fs.existsSync(path.join(root, "etc", "sudo-denied"))) return denied();
  const exe = which(cmd[0]);
  if (!exe) {
    process.stderr.write(`sudo: ${cmd[0]}: command not found\n`);
    return 1;
  }
  const procRoot = path.join(root, "proc", "sys");
  const touchesProc = cmd.some((a) => a.includes("/proc/sys"));
  const args = cmd.slice(1).map((a) => a.split("/proc/sys").join(procRoot));
  const before = touchesProc ? materialize(procRoot) : null;
  const user = os.userInfo();
  const r = spawnSync(exe, args, {
    stdio: "inherit",
    argv0: cmd[0],
    env: {
      ...process.env,
      SIM_SUDO: "1",
      SUDO_USER: user.username,
      SUDO_UID: String(user.uid),
      SUDO_GID: String(user.gid),
      SUDO_COMMAND: cmd.join(" "),
    },
  });
  if (before) reconcile(procRoot, before);
  if (r.error) {
    process.stderr.write(`sudo: unable to execute ${exe}: ${r.error.message}\n`);
    return 1;
  }
  if (r.signal) return 128 + (os.constants.signals[r.signal] || 0);
  return r.status === null ? 1 : r.status;
}

process.exitCode = main(process.argv.slice(2));
