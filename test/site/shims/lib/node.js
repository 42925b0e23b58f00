"use strict";
// Which simulated node a shim runs for. On the node (a login, tmux, a native engine) its
// environment says so (SIM_NODE_ROOT, SIM_NODE_NAME, SIM_NODE_IP, from sshd SetEnv). Inside a
// container, the node's Docker Engine gave the container what a real one gives: the node's host
// name (each node's dockerd runs in a UTS namespace of its own, and --network host hands it on),
// its /etc/hosts (with the node's name and address), and, through the NVIDIA hook stand-in
// (../nvidia/nvidia-container-runtime-hook), a read-only view of the node's simulated GPU and
// kernel state under CONTAINER_VIEW. A container without --gpus has no such view: no GPU.
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** Where the NVIDIA hook stand-in mounts the node's state files in a container (<view>/etc/...). */
const CONTAINER_VIEW = "/run/sm121-sim/node";

function inContainerView() {
  return !process.env.SIM_NODE_ROOT && fs.existsSync(path.join(CONTAINER_VIEW, "etc"));
}

/** The node's root (its etc/ holds the simulated state), or null when this process has no node (no GPU). */
function nodeRoot() {
  if (process.env.SIM_NODE_ROOT) return process.env.SIM_NODE_ROOT;
  return inContainerView() ? CONTAINER_VIEW : null;
}

function nodeName() {
  if (process.env.SIM_NODE_NAME) return process.env.SIM_NODE_NAME;
  return inContainerView() ? os.hostname() : "";
}

/** The address /etc/hosts gives `name`, as `hostname -i` reads it ("" when none). */
function hostsAddress(name) {
  let text;
  try {
    text = fs.readFileSync("/etc/hosts", "utf8");
  } catch {
    return "";
  }
  for (const line of text.split("\n")) {
    const [addr, ...names] = line.replace(/#.*/, "").trim().split(/\s+/);
    if (addr && names.includes(name)) return addr;
  }
  return "";
}

function nodeIp() {
  if (process.env.SIM_NODE_IP) return process.env.SIM_NODE_IP;
  return inContainerView() ? hostsAddress(os.hostname()) : "";
}

module.exports = { CONTAINER_VIEW, nodeRoot, nodeName, nodeIp };
