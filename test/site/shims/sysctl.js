#!/usr/bin/env node
"use strict";
// The test site's sysctl (procps-ng subset): `sysctl [-n] KEY...`,
// `sysctl [-n] [-q] -w KEY=VALUE...` (also KEY=VALUE without -w). Writes need
// root, which on the test site means running under the sudo shim (SIM_SUDO=1).
const state = require("./lib/sysctl-state");

function usage(bad) {
  process.stderr.write(`sysctl: invalid option -- '${bad}'\n\nUsage:\n sysctl [options] [variable[=value] ...]\n`);
  return 1;
}

function main(argv) {
  let quietName = false;
  let quiet = false;
  let write = false;
  const items = [];
  for (const a of argv) {
    if (a.startsWith("--")) {
      if (a === "--values") quietName = true;
      else if (a === "--write") write = true;
      else if (a === "--quiet") quiet = true;
      else {
        process.stderr.write(`sysctl: unrecognized option '${a}'\n`);
        return 1;
      }
    } else if (a.startsWith("-") && a.length > 1) {
      for (const c of a.slice(1)) {
        if (c === "n") quietName = true;
        else if (c === "w") write = true;
        else if (c === "q") quiet = true;
        else return usage(c);
      }
    } else items.push(a);
  }
  if (items.length === 0) {
    process.stderr.write("sysctl: no variables specified\n");
    return 1;
  }
  let rc = 0;
  const values = state.readAll();
  for (const item of items) {
    const eq = item.indexOf("=");
    if (write && eq < 0) {
      process.stderr.write(`sysctl: "${item}" must be of the form name=value\n`);
      rc = 1;
      continue;
    }
    const key = state.normalizeKey(eq >= 0 ? item.slice(0, eq).trim() : item);
    if (!state.known(key)) {
      process.stderr.write(`sysctl: cannot stat /proc/sys/${key.replace(/\./g, "/")}: No such file or directory\n`);
      rc = 255;
      continue;
    }
    if (eq < 0) {
      if (state.WRITE_ONLY.includes(key)) {
        process.stderr.write(`sysctl: permission denied on key '${key}'\n`);
        rc = 255;
        continue;
      }
      process.stdout.write(quietName ? `${values[key]}\n` : `${key} = ${values[key]}\n`);
      continue;
    }
    const value = item.slice(eq + 1).trim();
    if (process.env.SIM_SUDO !== "1") {
      process.stderr.write(`sysctl: permission denied on key "${key}"\n`);
      rc = 255;
      continue;
    }
    try {
      state.write(key, value);
    } catch (err) {
      process.stderr.write(`${err.message}\n`);
      rc = 255;
      continue;
    }
    if (!quiet) process.stdout.write(quietName ? `${value}\n` : `${key} = ${value}\n`);
  }
  return rc;
}

process.exitCode = main(process.argv.slice(2));
