"use strict";
// `docker logs` over the json-file log the supervisor writes: stdout lines go to
// stdout and stderr lines to stderr, as docker does (callers use 2>&1).
const fs = require("node:fs");
const store = require("./store");
const { parseFlags, UsageError } = require("./args");

const LOG_FLAGS = [
  { long: "follow", short: "f", kind: "bool" },
  { long: "tail", short: "n", kind: "string" },
  { long: "since", kind: "string" },
  { long: "until", kind: "string" },
  { long: "timestamps", short: "t", kind: "bool" },
  { long: "details", kind: "bool" },
];

/** --since/--until: RFC 3339 time, unix seconds, or a Go duration before now. */
function parseTime(flag, v) {
  if (/^\d+(\.\d+)?$/.test(v)) return Number(v) * 1000;
  const dur = /^((\d+(\.\d+)?)(h|m|s|ms))+$/.test(v);
  if (dur) {
    let ms = 0;
    for (const m of v.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) ms += Number(m[1]) * { h: 3600000, m: 60000, s: 1000, ms: 1 }[m[2]];
    return Date.now() - ms;
  }
  const t = Date.parse(v);
  if (Number.isNaN(t)) throw new UsageError(`invalid value for "${flag}": failed to parse value as time or duration: "${v}"`, "logs");
  return t;
}

function readEntries(file, offset) {
  let buf;
  try {
    const fd = fs.openSync(file, "r");
    const size = fs.fstatSync(fd).size;
    buf = Buffer.alloc(Math.max(0, size - offset));
    fs.readSync(fd, buf, 0, buf.length, offset);
    fs.closeSync(fd);
  } catch {
    return { entries: [], offset };
  }
  const text = buf.toString("utf8");
  const end = text.lastIndexOf("\n") + 1; // a line still being written stays for the next read
  const entries = text
    .slice(0, end)
    .split("\n")
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l));
  return { entries, offset: offset + Buffer.byteLength(text.slice(0, end)) };
}

function emit(entries, timestamps) {
  for (const e of entries) {
    const line = timestamps ? `${e.time} ${e.log}` : e.log;
    (e.stream === "stderr" ? process.stderr : process.stdout).write(line);
  }
}

/** Print the log (filtered) and, with follow, keep printing until the container stops. */
function followLogs(c, o) {
  const file = c.config.Sim.log;
  let { entries, offset } = readEntries(file, 0);
  if (o.since !== undefined) entries = entries.filter((e) => Date.parse(e.time) >= o.since);
  if (o.until !== undefined) entries = entries.filter((e) => Date.parse(e.time) < o.until);
  if (o.tail !== "all") entries = entries.slice(Math.max(0, entries.length - o.tail));
  emit(entries, o.timestamps);
  if (!o.follow) return Promise.resolve();
  return new Promise((resolve) => {
    const tick = () => {
      const running = store.refresh(store.load(c.dir) || c).state.Status === "running";
      const next = readEntries(file, offset);
      offset = next.offset;
      emit(next.entries, o.timestamps);
      if (!running && next.entries.length === 0) resolve();
      else setTimeout(tick, 100);
    };
    setTimeout(tick, 100);
  });
}

function logsCommand(argv) {
  const { opts, args } = parseFlags("logs", argv, LOG_FLAGS, true);
  if (args.length !== 1) throw new UsageError(`"docker logs" requires exactly 1 argument.`, "logs");
  let tail = "all";
  if (opts.tail !== undefined && opts.tail !== "all") {
    if (!/^-?\d+$/.test(opts.tail)) throw new UsageError(`invalid value for "tail": ${opts.tail}`, "logs");
    tail = Number(opts.tail) < 0 ? "all" : Number(opts.tail);
  }
  const c = store.mustFind(args[0]);
  return followLogs(c, {
    follow: Boolean(opts.follow),
    tail,
    since: opts.since !== undefined ? parseTime("since", opts.since) : undefined,
    until: opts.until !== undefined ? parseTime("until", opts.until) : undefined,
    timestamps: Boolean(opts.timestamps),
  }).then(() => 0);
}

module.exports = { logsCommand, followLogs };
