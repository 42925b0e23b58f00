#!/usr/bin/env node
"use strict";
// Stand-in for OpenMPI's orted, as ./mpirun.js starts it on another node through the rsh agent:
// it reads the -mca pairs OpenMPI passes (ess_base_vpid, orte_hnp_uri), says hello to mpirun,
// starts the rank mpirun hands it with its own environment (the container's: the node's fabric
// variables) plus mpirun's, and relays the rank's output and exit.
const { spawn } = require("node:child_process");
const { connect } = require("./mpiwire.js");

const argv = process.argv.slice(2);
const mca = {};
for (let i = 0; i < argv.length; i++) if (argv[i] === "-mca" || argv[i] === "--mca") mca[argv[++i]] = argv[++i];
const vpid = Number(mca.ess_base_vpid);
if (mca.orte_hnp_uri === undefined || !Number.isInteger(vpid)) {
  process.stderr.write("orted: this daemon is started by mpirun (no -mca orte_hnp_uri / ess_base_vpid)\n");
  process.exit(1);
}

connect(mca.orte_hnp_uri).then(
  (c) => {
    c.on((m) => {
      if (m.kind !== "launch") return;
      const env = { ...process.env, ...m.env };
      const p = spawn(m.argv[0], m.argv.slice(1), { env, stdio: ["ignore", "pipe", "pipe"] });
      p.stdout.on("data", (d) => c.send({ kind: "out", text: d.toString() }));
      p.stderr.on("data", (d) => c.send({ kind: "err", text: d.toString() }));
      p.on("error", (e) => {
        c.send({ kind: "err", text: `orted: could not start ${m.argv[0]}: ${e.message}\n` });
        c.send({ kind: "exit", rank: m.rank, code: 1 });
      });
      p.on("close", (code) => {
        c.send({ kind: "exit", rank: m.rank, code: code ?? 1 });
        c.sock.end();
      });
    });
    c.send({ kind: "hello", vpid });
  },
  (e) => {
    process.stderr.write(`orted: cannot reach mpirun at ${mca.orte_hnp_uri}: ${e.message}\n`);
    process.exit(1);
  },
);
