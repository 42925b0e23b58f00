"use strict";
// Which network NCCL uses for one rank, decided as NCCL's own IB plugin (net_ib.cc) decides it
// from what that rank's node has, and the NCCL_DEBUG=INFO lines NCCL prints about it:
// - NCCL_IB_DISABLE=1: no IB.
// - The HCAs: what libibverbs lists from sysfs. The node's sysfs is its etc/fabric.json (the
//   ConnectX-7 ports test/site/fabric.ts describes), on the node or, in a container, where the
//   NVIDIA hook stand-in mounts the node's etc/ (lib/node.js).
// - NCCL_IB_HCA filters them as NCCL does: a comma list of `name[:port]`, prefix matches unless it
//   starts with `=` (exact), excluded when it starts with `^`; unset, every HCA.
// - An HCA is opened through its uverbs character device (uverbsN for the Nth HCA): in a container,
//   /dev/infiniband, what --device gave it; on the node, its own device directory (<root>/dev/
//   infiniband, the node's fabric.devices). Missing: `Unable to open device`, as NCCL warns.
// - The port must be ACTIVE, and the process must be able to pin memory (CAP_IPC_LOCK: the
//   sandbox's memlock is 8 MiB whatever the container asks, test/site/README.md).
// No HCA left: `NET/IB : No device found.`, and NCCL uses its socket network.
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { nodeRoot } = require("../lib/node.js");

function hcasOfNode() {
  const root = nodeRoot();
  if (root === null) return [];
  try {
    return JSON.parse(fs.readFileSync(path.join(root, "etc", "fabric.json"), "utf8")).hcas || [];
  } catch {
    return [];
  }
}

function deviceDir() {
  return process.env.SIM_NODE_ROOT ? path.join(process.env.SIM_NODE_ROOT, "dev", "infiniband") : "/dev/infiniband";
}

function isCharDevice(p) {
  try {
    return fs.statSync(p).isCharacterDevice();
  } catch {
    return false;
  }
}

function ipcLock() {
  const m = /^CapEff:\s*([0-9a-f]+)/m.exec(fs.readFileSync("/proc/self/status", "utf8"));
  return m !== null && ((BigInt(`0x${m[1]}`) >> 14n) & 1n) === 1n;
}

/** NCCL_IB_HCA as NCCL parses it (parseStringList / matchIfList). */
function hcaFilter(spec) {
  let s = (spec || "").trim();
  if (s === "") return () => true;
  const exclude = s.startsWith("^");
  if (exclude) s = s.slice(1);
  const exact = s.startsWith("=");
  if (exact) s = s.slice(1);
  const items = s
    .split(",")
    .filter((x) => x !== "")
    .map((x) => {
      const [name, port] = x.split(":");
      return { name, port: port === undefined ? undefined : Number(port) };
    });
  const hit = (name, port) =>
    items.some((i) => (exact ? name === i.name : name.startsWith(i.name)) && (i.port === undefined || i.port === port));
  return (name, port) => (exclude ? !hit(name, port) : hit(name, port));
}

/**
 * This rank's network: `{ ib: true, ports: ["rocep1s0f1:1", ...] }` or `{ ib: false }`, and the
 * INFO/WARN lines NCCL prints on the way (`say(level, text)`).
 */
function chooseNet(env, say) {
  if (env.NCCL_IB_DISABLE === "1") return { ib: false, ports: [] };
  const wanted = hcaFilter(env.NCCL_IB_HCA);
  const dir = deviceDir();
  const ports = [];
  hcasOfNode().forEach((h, i) => {
    const port = h.port || 1;
    if (!wanted(h.name, port)) return;
    if (!isCharDevice(path.join(dir, `uverbs${i}`))) {
      say("WARN", `NET/IB : Unable to open device ${h.name}`);
      return;
    }
    if (h.state === "ACTIVE") ports.push(`${h.name}:${port}`);
  });
  if (ports.length > 0 && ipcLock()) return { ib: true, ports };
  say("INFO", "NET/IB : No device found.");
  return { ib: false, ports: [] };
}

/** NCCL's line prefix: host:pid:tid [cudaDev]. */
function prefix() {
  return `${os.hostname()}:${process.pid}:${process.pid} [0]`;
}

module.exports = { chooseNet, hcaFilter, prefix };
