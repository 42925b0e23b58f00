#!/usr/bin/env node
"use strict";
// The test site's free (procps-ng subset): `free [-b|-k|-m|-g|--bytes|--kibi|--mebi|--gibi]`.
// The machine running the tests is no GB10: its MemTotal is the node's, from
// <root>/etc/memory.json `{"memTotalKiB": N}` (default: a DGX Spark's 127,601,452 kB).
// free, buff/cache and available are this machine's own (/proc/meminfo), capped at that total;
// used is total - available, as procps-ng 4 counts it. Any other option is refused as
// procps-ng refuses an unknown one (sm121 calls `free -b` only).
const fs = require("node:fs");
const path = require("node:path");

const GB10_KIB = 127601452;
const UNITS = { "-b": 1, "--bytes": 1, "-k": 1024, "--kibi": 1024, "-m": 1024 ** 2, "--mebi": 1024 ** 2, "-g": 1024 ** 3, "--gibi": 1024 ** 3 };

function meminfo() {
  const out = {};
  for (const line of fs.readFileSync("/proc/meminfo", "utf8").split("\n")) {
    const m = /^(\w+(?:\(\w+\))?):\s+(\d+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

function totalKiB() {
  const file = path.join(process.env.SIM_NODE_ROOT || "", "etc", "memory.json");
  if (!fs.existsSync(file)) return GB10_KIB;
  const cfg = JSON.parse(fs.readFileSync(file, "utf8"));
  for (const k of Object.keys(cfg)) if (k !== "memTotalKiB") throw new Error(`free (test site): ${file}: unknown key "${k}" (known: memTotalKiB)`);
  if (!Number.isInteger(cfg.memTotalKiB) || cfg.memTotalKiB <= 0) throw new Error(`free (test site): ${file}: memTotalKiB must be a positive whole number of KiB`);
  return cfg.memTotalKiB;
}

function main(argv) {
  let unit = 1024;
  for (const a of argv) {
    if (a in UNITS) unit = UNITS[a];
    else {
      const bad = a.startsWith("--") ? `unrecognized option '${a}'` : `invalid option -- '${a.replace(/^-/, "").slice(0, 1)}'`;
      process.stderr.write(`free: ${bad}\n\nUsage:\n free [options]\n\nFor more details see free(1).\n`);
      return 1;
    }
  }
  const mi = meminfo();
  const total = totalKiB();
  const cap = (x) => Math.min(x, total);
  const free = cap(mi.MemFree || 0);
  const shared = cap(mi.Shmem || 0);
  const cache = cap((mi.Buffers || 0) + (mi.Cached || 0) + (mi.SReclaimable || 0));
  const available = cap(mi.MemAvailable || 0);
  const used = total - available;
  const n = (kib) => String(Math.floor((kib * 1024) / unit));
  // procps-ng's layout: "%-9s%11s" then " %11s" per column.
  const row = ([label, first, ...rest]) => `${label.padEnd(9)}${first.padStart(11)}${rest.map((c) => ` ${c.padStart(11)}`).join("")}`;
  process.stdout.write(`${" ".repeat(15)}total        used        free      shared  buff/cache   available\n`);
  process.stdout.write(`${row(["Mem:", n(total), n(used), n(free), n(shared), n(cache), n(available)])}\n`);
  process.stdout.write(`${row(["Swap:", n(mi.SwapTotal || 0), n((mi.SwapTotal || 0) - (mi.SwapFree || 0)), n(mi.SwapFree || 0)])}\n`);
  return 0;
}

try {
  process.exitCode = main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`${err.message}\n`);
  process.exitCode = 1;
}
