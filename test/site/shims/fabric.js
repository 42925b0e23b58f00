#!/usr/bin/env node
// The node's fabric tools, for a node whose etc/fabric.json describes its ConnectX-7 ports (a
// test writes it: see test/site/fabric.ts). Each prints what the real tool prints, in its
// format: `ip -o -4 addr show`, `ip -o link show` (iproute2), `rdma link show` (iproute2),
// `ibdev2netdev` (MLNX OFED) and `show_gids` (MLNX OFED; the real one reads sysfs). Samples of the
// real outputs are in test/fixtures/fabric/README.md. Any other `ip` command runs the real ip.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { spawnSync } = require("node:child_process");

const [tool, ...args] = process.argv.slice(2);
const file = path.join(process.env.SIM_NODE_ROOT || "", "etc", "fabric.json");
const fabric = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8")) : undefined;

function realIp() {
  const bin = ["/usr/sbin/ip", "/sbin/ip", "/usr/bin/ip"].find((p) => fs.existsSync(p));
  if (bin === undefined) {
    process.stderr.write("ip: command not found\n");
    process.exit(127);
  }
  const r = spawnSync(bin, args, { stdio: "inherit" });
  process.exit(r.status === null ? 1 : r.status);
}

const out = (lines) => process.stdout.write(lines.map((l) => `${l}\n`).join(""));
const ifaces = () => [{ name: "lo", loopback: true, up: true }, ...((fabric && fabric.interfaces) || [])];
const brd = (a, p) => {
  const n = a.split(".").reduce((x, o) => x * 256 + Number(o), 0) | (p === 32 ? 0 : 0xffffffff >>> p);
  return [24, 16, 8, 0].map((s) => (n >>> s) & 255).join(".");
};

function ip() {
  const words = args.join(" ");
  if (fabric === undefined) return realIp();
  if (words === "-o -4 addr show") {
    return out(
      ifaces().flatMap((f, i) => {
        if (f.loopback)
          return [`${i + 1}: lo    inet 127.0.0.1/8 scope host lo\\       valid_lft forever preferred_lft forever`];
        if (!f.address) return [];
        return [
          `${i + 1}: ${f.name}    inet ${f.address}/${f.prefix} brd ${brd(f.address, f.prefix)} ` +
            `scope global noprefixroute ${f.name}\\       valid_lft forever preferred_lft forever`,
        ];
      }),
    );
  }
  if (words === "-o link show") {
    return out(
      ifaces().map((f, i) => {
        if (f.loopback)
          return (
            `${i + 1}: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN mode ` +
            `DEFAULT group default qlen 1000\\    link/loopback 00:00:00:00:00:00 brd 00:00:00:00:00:00`
          );
        const flags = f.up ? "BROADCAST,MULTICAST,UP,LOWER_UP" : "NO-CARRIER,BROADCAST,MULTICAST,UP";
        return (
          `${i + 1}: ${f.name}: <${flags}> mtu 9000 qdisc mq state ${f.up ? "UP" : "DOWN"} ` +
          `mode DEFAULT group default qlen 1000\\    link/ether ${f.mac || "4c:bb:47:00:00:01"} brd ff:ff:ff:ff:ff:ff`
        );
      }),
    );
  }
  return realIp();
}

function hcas() {
  return (fabric && fabric.hcas) || [];
}

function rdma() {
  if (!/^link( show)?$/.test(args.join(" "))) {
    process.stderr.write("rdma: only 'rdma link show' is simulated\n");
    process.exit(1);
  }
  out(
    hcas().map(
      (h) =>
        `link ${h.name}/${h.port || 1} state ${h.state} ` +
        `physical_state ${h.physical}${h.netdev ? ` netdev ${h.netdev}` : ""}`,
    ),
  );
}

function ibdev2netdev() {
  out(hcas().map((h) => `${h.name} port ${h.port || 1} ==> ${h.netdev} (${h.state === "ACTIVE" ? "Up" : "Down"})`));
}

// MLNX OFED's show_gids: link-local v1/v2 from the MAC, then the IPv4-mapped v1/v2 of the netdev's address.
function showGids() {
  const rows = [
    "DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV",
    "---\t----\t-----\t---\t\t\t\t\t------------  \t---\t---",
  ];
  let count = 0;
  for (const h of hcas()) {
    const nic = ifaces().find((f) => f.name === h.netdev) || {};
    const ll = "fe80:0000:0000:0000:4ebb:47ff:fe00:0001";
    const gids = [
      [ll, ""],
      [ll, ""],
    ];
    if (nic.address) {
      const hex = nic.address.split(".").map((o) => Number(o).toString(16).padStart(2, "0"));
      const mapped = `0000:0000:0000:0000:0000:ffff:${hex[0]}${hex[1]}:${hex[2]}${hex[3]}`;
      gids.push([mapped, nic.address], [mapped, nic.address]);
    }
    gids.forEach(([gid, v4], i) => {
      const ver = i % 2 === 0 ? "v1" : "v2";
      rows.push(
        v4
          ? `${h.name}\t${h.port || 1}\t${i}\t${gid}\t${v4}  \t${ver}\t${h.netdev}`
          : `${h.name}\t${h.port || 1}\t${i}\t${gid}\t\t\t${ver}\t${h.netdev}`,
      );
      count++;
    });
  }
  rows.push("n_gids_found=" + count);
  out(rows);
}

const tools = { ip, rdma, ibdev2netdev, show_gids: showGids };
if (!Object.hasOwn(tools, tool)) {
  process.stderr.write(`fabric.js: unknown tool ${tool}\n`);
  process.exit(2);
}
tools[tool]();
