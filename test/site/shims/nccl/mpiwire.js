"use strict";
// The wire of the site's MPI stand-in (./mpirun.js, ./orted.js, ./all_reduce_perf.js): JSON lines
// over TCP to mpirun's own listener, whose address OpenMPI hands every daemon and process as
// OMPI_MCA_orte_hnp_uri ("<jobid>.0;tcp://<ip>:<port>"). A daemon says hello and gets its
// process to start, then relays the process's output and exit; a process does its
// MPI_Bcast/MPI_Gather through it. (Real OpenMPI does these over its OOB and PMIx; the stand-in
// all_reduce_perf cannot link libmpi, so the runtime it talks to is a stand-in too.)
const net = require("node:net");

/** `<jobid>.0;tcp://ip[,ip2]:port` -> { host, port }. */
function hnpAddress(uri) {
  const m = /tcp:\/\/([^,:;]+)(?:,[^:;]*)?:(\d+)/.exec(uri ?? "");
  return m === null ? undefined : { host: m[1], port: Number(m[2]) };
}

/** A JSON-lines connection: `send(obj)`, and `on(fn)` for each object that arrives. */
function lines(sock) {
  let buf = "";
  const handlers = [];
  sock.setEncoding("utf8");
  sock.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const msg = JSON.parse(buf.slice(0, i));
      buf = buf.slice(i + 1);
      for (const h of handlers) h(msg);
    }
  });
  return { sock, send: (o) => sock.write(`${JSON.stringify(o)}\n`), on: (h) => handlers.push(h) };
}

function connect(uri) {
  const a = hnpAddress(uri);
  if (a === undefined) throw new Error(`no mpirun address in OMPI_MCA_orte_hnp_uri (${uri})`);
  return new Promise((resolve, reject) => {
    const c = net.connect(a.port, a.host, () => resolve(lines(c)));
    c.once("error", reject);
  });
}

/** A process's MPI: bcast(key, value?) and gather(key, value) through mpirun; a singleton without one. */
function runtime(env) {
  const rank = Number(env.OMPI_COMM_WORLD_RANK ?? "0");
  const uri = env.OMPI_MCA_orte_hnp_uri;
  if (uri === undefined) {
    return { bcast: async (_k, v) => v, gather: async (_k, v) => [v], finalize: async () => undefined };
  }
  const conn = connect(uri);
  const ask = async (msg, answer) => {
    const c = await conn;
    return new Promise((resolve) => {
      c.on((m) => m.key === msg.key && m.kind === answer && resolve(m.value));
      c.send(msg);
    });
  };
  return {
    bcast: async (key, value) => {
      if (rank === 0) {
        (await conn).send({ kind: "put", key, value });
        return value;
      }
      return ask({ kind: "get", key }, "value");
    },
    gather: async (key, value) => {
      if (rank !== 0) {
        (await conn).send({ kind: "gather", key, rank, value });
        return undefined;
      }
      return ask({ kind: "gather", key, rank, value }, "gathered");
    },
    finalize: async () => (await conn).sock.end(),
  };
}

module.exports = { connect, hnpAddress, lines, runtime };
