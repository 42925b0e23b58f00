#!/usr/bin/env node
"use strict";
// The test site's docker daemon: one process for the whole site that answers the docker CLI's
// commands that finish at once (inspect, ps, images, version, rm of containers that do not run)
// for any node, as the real CLI asks dockerd instead of reading the containers itself. It runs
// the same code as the CLI (docker/cli.js), in this process: a node's `docker inspect` then
// costs a bash and a TCP round trip, not a Node.js start (sm121 runs one on every node at every
// plan). Everything else (run, stop, logs, a command that would wait), and every
// command when this daemon does not answer, runs in a process of its own (see docker-cli).
//
// Protocol, on 127.0.0.1:<port> (the port in <site>/run/dockerd.port): the request is
// NUL-terminated fields: the node's root ($SIM_NODE_ROOT), the argument count, the arguments.
// The answer is NUL-terminated fields: the exit code, stdout, stderr (what these commands print
// holds no NUL). Usage: dockerd.js <site dir>
const fs = require("node:fs");
const net = require("node:net");
const path = require("node:path");
const { run } = require("./docker/cli");
const { WouldWait } = require("./docker/store");

/** The command's exit code and output, run here with the node's root and this process's stdout and stderr caught. */
function answer(root, argv) {
  const out = [];
  const err = [];
  const write = { out: process.stdout.write, err: process.stderr.write };
  const saved = process.env.SIM_NODE_ROOT;
  process.stdout.write = (chunk) => out.push(String(chunk)) > 0;
  process.stderr.write = (chunk) => err.push(String(chunk)) > 0;
  if (root === "") delete process.env.SIM_NODE_ROOT;
  else process.env.SIM_NODE_ROOT = root;
  let code;
  try {
    code = run(argv, true);
  } finally {
    process.stdout.write = write.out;
    process.stderr.write = write.err;
    if (saved === undefined) delete process.env.SIM_NODE_ROOT;
    else process.env.SIM_NODE_ROOT = saved;
  }
  // The CLI only sends commands that finish at once; one that does not is the CLI's to run.
  if (typeof code !== "number") throw new Error(`docker ${argv[0] ?? ""} did not finish at once`);
  return `${code}\0${out.join("")}\0${err.join("")}\0`;
}

/** The request's fields once all have arrived, else undefined. */
function request(buf) {
  const fields = buf.toString("utf8").split("\0");
  if (fields.length < 3) return undefined;
  const n = Number(fields[1]);
  // Every field ends in a NUL, so a complete request splits into 2 + n fields and one empty tail.
  if (fields.length < n + 3) return undefined;
  return { root: fields[0], argv: fields.slice(2, 2 + n) };
}

function main() {
  const site = process.argv[2];
  if (site === undefined) throw new Error("usage: dockerd.js <site dir>");
  const server = net.createServer((sock) => {
    let buf = Buffer.alloc(0);
    sock.on("data", (d) => {
      buf = Buffer.concat([buf, d]);
      const req = request(buf);
      if (req === undefined) return;
      try {
        sock.end(answer(req.root, req.argv));
      } catch (e) {
        // No answer: the CLI runs the command itself (one that waits, at once; a failure, logged).
        if (!(e instanceof WouldWait)) fs.appendFileSync(path.join(site, "run", "dockerd.log"), `${new Date().toISOString()} ${req.argv.join(" ")}: ${e && e.stack ? e.stack : e}\n`);
        sock.destroy();
      }
    });
    sock.on("error", () => sock.destroy());
  });
  const file = path.join(site, "run", "dockerd.port");
  server.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(`${file}.tmp`, `${server.address().port}\n`);
    fs.renameSync(`${file}.tmp`, file);
  });
  // Stopped, it takes its port file along: the CLI then runs every command itself at once,
  // instead of asking a port another process may have taken since.
  for (const sig of ["SIGTERM", "SIGINT"]) {
    process.on(sig, () => {
      fs.rmSync(file, { force: true });
      process.exit(0);
    });
  }
}

main();
