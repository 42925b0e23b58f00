"use strict";
// Multi-node rendezvous over TCP (what torch.distributed/NCCL init does for the
// real engines): rank 0 listens, each other rank connects and says hello (one
// JSON line), rank 0 answers {"ready":true} once all ranks are in. A lost
// connection afterwards is fatal on both sides.
const net = require("node:net");

function lines(sock, onLine) {
  let buf = "";
  sock.setEncoding("utf8");
  sock.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      let msg;
      try {
        msg = JSON.parse(line);
      } catch {
        msg = { error: `garbage on the rendezvous socket: ${line.slice(0, 80)}` };
      }
      onLine(msg);
    }
  });
}

/** Resolves when all expected ranks joined; hooks: onJoined(rank, ip), onLost(message). */
function head(r, hooks) {
  return new Promise((resolve, reject) => {
    const members = new Map();
    let done = false;
    const server = net.createServer((sock) => {
      sock.on("error", () => {});
      let rank = null;
      lines(sock, (msg) => {
        if (rank !== null) return;
        const h = msg.hello || {};
        const mismatch = Object.keys(r.hello).find((k) => h[k] !== r.hello[k]);
        let err = null;
        if (mismatch)
          err =
            `rank ${h.rank} disagrees on ${mismatch}: ${JSON.stringify(h[mismatch])} (rank 0 ` +
            `has ${JSON.stringify(r.hello[mismatch])})`;
        else if (!Number.isInteger(h.rank) || h.rank < 1 || h.rank > r.expect)
          err = `rank ${h.rank} is outside 1..${r.expect}`;
        else if (members.has(h.rank)) err = `rank ${h.rank} joined twice (from ${h.ip})`;
        else if (done) err = "the process group is already complete";
        if (err) {
          sock.end(JSON.stringify({ error: err }) + "\n");
          if (!done) {
            done = true;
            server.close();
            reject(new Error(`rendezvous failed: ${err}`));
          }
          return;
        }
        rank = h.rank;
        members.set(rank, sock);
        hooks.onJoined(rank, h.ip);
        sock.on("close", () =>
          hooks.onLost(
            `connection to node rank ${rank} (${h.ip}) lost: remote process exited or there was a network error`,
          ),
        );
        if (members.size === r.expect) {
          done = true;
          for (const s of members.values()) s.write(JSON.stringify({ ready: true }) + "\n");
          resolve();
        }
      });
    });
    server.on("error", (err) => {
      if (!done) {
        done = true;
        reject(new Error(`[Errno 98] cannot listen on ${r.addr}:${r.port}: ${err.code || err.message}`));
      }
    });
    server.listen(r.port, r.addr);
  });
}

/** Connects (retrying until timeoutS) and resolves once rank 0 says ready. */
function worker(r, ip, timeoutS, hooks) {
  return new Promise((resolve, reject) => {
    const deadline = Date.now() + timeoutS * 1000;
    let settled = false;
    const attempt = () => {
      const sock = net.connect({ host: r.addr, port: r.port, localAddress: ip || undefined });
      let connected = false;
      sock.on("connect", () => {
        connected = true;
        sock.write(JSON.stringify({ hello: { ...r.hello, rank: r.rank, ip } }) + "\n");
      });
      lines(sock, (msg) => {
        if (msg.ready && !settled) {
          settled = true;
          sock.on("close", () => hooks.onLost(`connection to the master ${r.addr}:${r.port} lost`));
          resolve();
        } else if (msg.error && !settled) {
          settled = true;
          reject(new Error(`rendezvous rejected: ${msg.error}`));
        }
      });
      sock.on("error", () => {});
      sock.on("close", () => {
        if (settled) return;
        if (connected) {
          settled = true;
          reject(new Error(`the master ${r.addr}:${r.port} closed the connection before the group was complete`));
        } else if (Date.now() > deadline) {
          settled = true;
          reject(new Error(`timed out after ${timeoutS}s connecting to the master at ${r.addr}:${r.port}`));
        } else setTimeout(attempt, 300);
      });
    };
    attempt();
  });
}

module.exports = { head, worker };
