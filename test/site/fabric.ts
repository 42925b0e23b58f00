// A simulated node's fabric: the ConnectX-7 ports its tools report (etc/fabric.json, read by
// shims/fabric.js) and a directory of RDMA character devices (what /dev/infiniband holds on a
// Spark), which the node's site declares as its fabric.devices and a container gets mapped to
// /dev/infiniband. Device nodes need root (mknod); the site runs as root where Docker does.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import type { SimNode } from "./site";

export interface SimInterface {
  name: string;
  address?: string;
  prefix?: number;
  up: boolean;
}
export interface SimHca {
  name: string;
  port?: number;
  netdev: string;
  state: "ACTIVE" | "DOWN";
  physical: "LINK_UP" | "DISABLED";
}

export interface SimFabric {
  interfaces: SimInterface[];
  hcas: SimHca[];
  /** Make the node's device directory (uverbs0.., rdma_cm) under its root; false: the node has none. */
  devices: boolean;
}

/** Where the node's RDMA devices are (its site's `fabric.devices`). */
export function devicesDir(node: SimNode): string {
  return path.join(node.root, "dev", "infiniband");
}

/** A Spark cabled on its second port: enp1s0f1np1 up with `address`, its two RoCE twins active. */
export function sparkFabric(address: string, prefix = 24): SimFabric {
  return {
    interfaces: [
      { name: "enp1s0f0np0", up: false },
      { name: "enp1s0f1np1", address, prefix, up: true },
      { name: "enP2p1s0f1np1", up: true },
    ],
    hcas: [
      { name: "rocep1s0f0", netdev: "enp1s0f0np0", state: "DOWN", physical: "DISABLED" },
      { name: "rocep1s0f1", netdev: "enp1s0f1np1", state: "ACTIVE", physical: "LINK_UP" },
      { name: "roceP2p1s0f1", netdev: "enP2p1s0f1np1", state: "ACTIVE", physical: "LINK_UP" },
    ],
    devices: true,
  };
}

export function setFabric(node: SimNode, f: SimFabric): void {
  fs.writeFileSync(
    path.join(node.root, "etc", "fabric.json"),
    `${JSON.stringify({ interfaces: f.interfaces, hcas: f.hcas }, null, 2)}\n`,
  );
  const dir = devicesDir(node);
  fs.rmSync(dir, { recursive: true, force: true });
  if (!f.devices) return;
  fs.mkdirSync(dir, { recursive: true });
  // As on a Spark: one uverbs device per HCA (major 231), and rdma_cm (10:58).
  const devs: Array<[string, number, number]> = [
    ...f.hcas.map((_, i): [string, number, number] => [`uverbs${i}`, 231, 192 + i]),
    ["rdma_cm", 10, 58],
  ];
  for (const [name, major, minor] of devs) {
    try {
      execFileSync("mknod", [path.join(dir, name), "c", String(major), String(minor)], { stdio: "ignore" });
    } catch {
      fs.writeFileSync(path.join(dir, name), "");
    }
  }
}

/** The two-Spark vLLM pair (tp 2, docker) the fabric tests serve over RDMA. */
export const PAIR_RECIPE = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-32B"
served_model_name = "qwen3-32b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
tp = 2
port = 8000
args = ["--max-model-len", "32768"]
[readiness]
timeout_s = 60
max_model_len = 32768
`;
