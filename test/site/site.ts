// The simulated test site: one sshd per node on its own loopback address, each
// node with its own root (home, tmp, bin with the shims, etc, var, opt), a shared
// client key, known_hosts, and the fake DGPP repository. Everything lives under
// the site directory; stop() ends every process of the site by pid.
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { checkPlainPath, engineMetricsDir, engineOptionsDir, nodeBinDir, siteSourceDir } from "./paths";
import { isAlive, killTmuxServers, registeredProcesses, siteProcesses, terminate, type ProcRecord } from "./procs";
import { startDockerd } from "./dockerd";
import { checkConfig, ensurePrivsepDir, sshdConfigPath, keygen, knownHostsLine, sshConfigFor, sshdConfig, startSshd, waitForSshd } from "./sshd";
import { createDgppRepo } from "./dgpp";

export interface SimNode {
  name: string;
  ip: string;
  sshPort: number;
  root: string;
  home: string;
}

export interface SimSite {
  dir: string;
  user: string;
  nodes: SimNode[];
  clientKey: string;
  knownHosts: string;
  dgppRepo: string;
  dgppRevs: string[];
  /** The Node.js bin directory on the nodes' PATH. */
  nodeBin: string;
  stop(): Promise<void>;
}

/** An image a node "has": what `docker run IMAGE` runs without a command. */
export interface ImageSpec {
  entrypoint: string[] | null;
  cmd?: string[];
  /** The image ID (default: derived from the reference, the same on every node). */
  id?: string;
  /** The bytes `docker save` streams (default 64 KiB). */
  size?: number;
}

export interface StartSiteOptions {
  dir: string;
  nodes: string[];
  /** Last octet of the first node's address (default 11), in $SM121_TEST_NET (default 127.0.0). */
  firstIp?: number;
  /** Port of every node's sshd (default 2222). */
  sshPort?: number;
  /** The images every node has (default DEFAULT_IMAGES). */
  images?: Record<string, ImageSpec>;
}

/** Contents of <root>/etc/fake-engine.json (see shims/engine/common.js). */
export interface EngineBehaviour {
  startDelayS?: number;
  mode?: "ok" | "never-ready" | "crash-after" | "crash-loading" | "exit-now" | "chat-never-answers" | "hung";
  crashAfterS?: number;
  tokensPerSecond?: number;
  kvCacheTokens?: number | null;
  ignoreSigterm?: boolean;
  rendezvousTimeoutS?: number;
}

export const DEFAULT_IMAGES: Record<string, ImageSpec> = {
  "vllm/vllm-openai:latest": { entrypoint: ["vllm", "serve"] },
  "vllm/vllm-openai:v0.11.1": { entrypoint: ["vllm", "serve"] },
  "nvcr.io/nvidia/vllm:25.10-py3": { entrypoint: null, cmd: ["bash"] },
  "nvcr.io/nvidia/vllm:26.01-py3": { entrypoint: null, cmd: ["bash"] },
  "lmsysorg/sglang:spark": { entrypoint: null, cmd: ["bash"] },
  "ghcr.io/kindlingai/gr8:latest": { entrypoint: ["/opt/gr8/gr8"], cmd: ["--help"] },
  "ubuntu:24.04": { entrypoint: null, cmd: ["bash"] },
};

const BIN_LINKS: Record<string, string> = {
  docker: "docker-cli",
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

interface SiteFile extends Omit<SimSite, "stop"> {
  sshd: ProcRecord[];
}

/** What sshd_config SetEnv gives every session of the node. */
function sessionEnv(site: Pick<SimSite, "dir" | "nodeBin">, node: SimNode): Record<string, string> {
  return {
    HOME: node.home,
    PATH: `${node.root}/bin:${site.nodeBin}:/usr/local/bin:/usr/bin:/bin`,
    TMUX_TMPDIR: `${node.root}/tmp`,
    TMPDIR: `${node.root}/tmp`,
    SIM_NODE_ROOT: node.root,
    SIM_NODE_NAME: node.name,
    SIM_NODE_IP: node.ip,
    SIM_SITE_DIR: site.dir,
    // The simulation's own: the shims are Node.js programs, and a node's CPU is this machine's.
    // With a compile cache for the site, each shim start (docker, the fake engine) compiles nothing
    // it compiled before; a real node runs the docker CLI and the engine, no Node.js at all.
    NODE_COMPILE_CACHE: path.join(site.dir, "run", "node-compile-cache"),
  };
}

/** The environment a login on the node sees (sshd's USER/LOGNAME/SHELL plus SetEnv). */
export function nodeEnv(site: Pick<SimSite, "dir" | "user" | "nodeBin">, node: SimNode): Record<string, string> {
  return { USER: site.user, LOGNAME: site.user, SHELL: os.userInfo().shell ?? "/bin/bash", ...sessionEnv(site, node) };
}

function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function buildNode(site: Omit<SiteFile, "sshd" | "dgppRepo" | "dgppRevs">, node: SimNode, images: Record<string, ImageSpec>): string {
  const r = node.root;
  for (const d of ["home/.ssh", "home/.cache", "tmp", "bin", "etc/ssh", "var/log", "var/run", "var/docker/containers", "opt/gr8"]) {
    fs.mkdirSync(path.join(r, d), { recursive: true });
  }
  const shims = path.join(site.dir, "shims");
  // The node's own tools know their node whatever the caller's environment is (`env -i` in a
  // script recipe must still reach the node's docker), as on a real machine; and they start with
  // the site's compile cache (see sessionEnv).
  const identity = ["SIM_NODE_ROOT", "SIM_NODE_NAME", "SIM_NODE_IP", "SIM_SITE_DIR", "NODE_COMPILE_CACHE"] as const;
  const env = sessionEnv(site, node);
  for (const [name, target] of Object.entries(BIN_LINKS)) {
    const exports = identity.map((k) => `${k}='${env[k]}'; export ${k}`).join("\n");
    fs.writeFileSync(path.join(r, "bin", name), `#!/bin/sh\n${exports}\nexec '${path.join(shims, target)}' "$@"\n`, { mode: 0o755 });
  }
  fs.symlinkSync(path.join(shims, "gr8"), path.join(r, "opt", "gr8", "gr8"));
  writeJson(path.join(r, "etc", "docker-images.json"), images);
  writeJson(path.join(r, "etc", "sysctl.json"), { "vm.watermark_scale_factor": "10", "vm.compaction_proactiveness": "20" });
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
  fs.writeFileSync(cfg, sshdConfig({ name: node.name, ip: node.ip, port: node.sshPort, root: r, user: site.user, authorizedKeys: `${authorizedKeys} ${own}`, env: sessionEnv(site, node) }));
  return cfg;
}

function register(dir: string, rec: ProcRecord, node: string): void {
  writeJson(path.join(dir, "run", "procs", `${rec.pid}.json`), { ...rec, node });
}

/** The first three octets of the site's loopback addresses: `$SM121_TEST_NET`, default 127.0.0. */
export function testNet(): string {
  const prefix = process.env["SM121_TEST_NET"] ?? "127.0.0";
  if (!/^127\.\d{1,3}\.\d{1,3}$/.test(prefix)) throw new Error(`SM121_TEST_NET=${prefix} must be 127.X.Y (a loopback /24)`);
  return prefix;
}

export async function startSite(opts: StartSiteOptions): Promise<SimSite> {
  const dir = path.resolve(opts.dir);
  checkPlainPath("the site dir", dir);
  const firstIp = opts.firstIp ?? 11;
  // Parallel runs of the same suites (two checkouts) keep apart by the third octet.
  const prefix = testNet();
  const sshPort = opts.sshPort ?? 2222;
  if (opts.nodes.length === 0) throw new Error("test site: at least one node is needed");
  if (new Set(opts.nodes).size !== opts.nodes.length) throw new Error(`test site: node names repeat: ${opts.nodes.join(", ")}`);
  for (const n of opts.nodes) if (!/^[a-z][a-z0-9-]{0,30}$/.test(n)) throw new Error(`test site: node name ${JSON.stringify(n)} must match [a-z][a-z0-9-]*`);
  if (firstIp < 2 || firstIp + opts.nodes.length - 1 > 254) throw new Error(`test site: ${prefix}.${firstIp} + ${opts.nodes.length} nodes leaves ${prefix}.2-254`);
  await stopStaleSite(dir);
  // Another run's sshd on the same address would answer in place of ours (with its own host key).
  const taken = (await Promise.all(opts.nodes.map((_, i) => listening(`${prefix}.${firstIp + i}`, sshPort)))).map((t, i) => (t ? `${prefix}.${firstIp + i}:${sshPort}` : "")).filter((a) => a !== "");
  if (taken.length > 0) throw new Error(`test site: ${taken.join(", ")} already in use (another run, or one that crashed: \`ss -ltnp\` shows the process); stop it or pick another firstIp/sshPort`);
  fs.mkdirSync(dir, { recursive: true });
  for (const sub of ["nodes", "ssh", "shims", "run", "dgpp-src", "dgpp.git", "dgpp-calls.log", "site.json", "hf-hub", "hf-downloads.log", "registry"]) fs.rmSync(path.join(dir, sub), { recursive: true, force: true });
  try {
    ensurePrivsepDir();
    fs.cpSync(path.join(siteSourceDir(), "shims"), path.join(dir, "shims"), { recursive: true });
    // The hub the fake `hf download` serves (shims/hfhub/download.js).
    fs.cpSync(path.join(siteSourceDir(), "hf-hub"), path.join(dir, "hf-hub"), { recursive: true });
    // The fake engines parse argv with the engines' option tables, the same files sm121 checks recipes with.
    fs.cpSync(engineOptionsDir(), path.join(dir, "shims", "engine", "options"), { recursive: true, filter: (f) => !f.endsWith(".ts") });
    fs.cpSync(engineMetricsDir(), path.join(dir, "shims", "engine", "metrics"), { recursive: true });
    register(dir, await startDockerd(dir, 15000), "");
    fs.mkdirSync(path.join(dir, "ssh"), { recursive: true });
    const clientKey = path.join(dir, "ssh", "id_ed25519");
    const clientPub = keygen(clientKey, "sm121-test-site-client");
    fs.writeFileSync(path.join(dir, "ssh", "authorized_keys"), `${clientPub}\n`);
    const nodes: SimNode[] = opts.nodes.map((name, i) => {
      const root = path.join(dir, "nodes", name);
      return { name, ip: `${prefix}.${firstIp + i}`, sshPort, root, home: path.join(root, "home") };
    });
    const knownHosts = path.join(dir, "ssh", "known_hosts");
    const lines = nodes.map((n) => {
      fs.mkdirSync(path.join(n.root, "etc", "ssh"), { recursive: true });
      return knownHostsLine(n.ip, n.sshPort, keygen(path.join(n.root, "etc", "ssh", "ssh_host_ed25519_key"), `${n.name}-host`));
    });
    fs.writeFileSync(knownHosts, `${lines.join("\n")}\n`);
    const base = { dir, user: os.userInfo().username, nodes, clientKey, knownHosts, nodeBin: nodeBinDir() };
    const sshd: ProcRecord[] = [];
    const waits: Promise<void>[] = [];
    for (const node of nodes) {
      const cfg = buildNode(base, node, opts.images ?? DEFAULT_IMAGES);
      checkConfig(cfg);
      const log = path.join(node.root, "var", "log", "sshd.log");
      const rec = startSshd(cfg, log);
      register(dir, rec, node.name);
      sshd.push(rec);
      waits.push(waitForSshd(node.ip, node.sshPort, rec, log, 15000));
    }
    await Promise.all(waits);
    const { repo, revs } = createDgppRepo(dir);
    const file: SiteFile = { ...base, dgppRepo: repo, dgppRevs: revs, sshd };
    writeJson(path.join(dir, "site.json"), file);
    return { ...file, stop: () => stopStaleSite(dir) };
  } catch (err) {
    await stopStaleSite(dir);
    throw err;
  }
}

function listening(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = net.connect({ host, port });
    sock.setTimeout(1000);
    sock.once("connect", () => {
      sock.destroy();
      resolve(true);
    });
    sock.once("error", () => resolve(false));
    sock.once("timeout", () => {
      sock.destroy();
      resolve(false);
    });
  });
}

/** The site recorded in <dir>/site.json (for the CLI and for tests in other processes). */
export function loadSite(dir: string): SimSite {
  const abs = path.resolve(dir);
  const f = JSON.parse(fs.readFileSync(path.join(abs, "site.json"), "utf8")) as SiteFile;
  return {
    dir: f.dir, user: f.user, nodes: f.nodes, clientKey: f.clientKey, knownHosts: f.knownHosts,
    dgppRepo: f.dgppRepo, dgppRevs: f.dgppRevs, nodeBin: f.nodeBin, stop: () => stopStaleSite(abs),
  };
}

/**
 * Ends every process of the site in `dir` (also of a crashed earlier run): the
 * tmux server of each node, every process recorded under <dir>/run/procs (sshd,
 * container supervisors and processes, fake engines), then anything left whose
 * environment or command line names the site. Files stay. Idempotent.
 */
export async function stopStaleSite(dir: string): Promise<void> {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs)) return;
  const registered = registeredProcesses(abs);
  await terminate(registered.filter((r) => r.what.startsWith("sshd ")), 2000);
  killTmuxServers(abs);
  await terminate(registered, 3000);
  for (let round = 0; round < 5; round++) {
    const left = siteProcesses(abs);
    if (left.length === 0) break;
    await terminate(left, round === 0 ? 1500 : 200);
  }
  const reg = path.join(abs, "run", "procs");
  for (const r of registeredProcesses(abs)) if (!isAlive(r.pid, r.start)) fs.rmSync(path.join(reg, `${r.pid}.json`), { force: true });
}

export function findNode(site: SimSite, name: string): SimNode {
  const node = site.nodes.find((n) => n.name === name);
  if (node === undefined) throw new Error(`test site: no node ${name} (nodes: ${site.nodes.map((n) => n.name).join(", ")})`);
  return node;
}

/** Write (or with null, remove) the fake engine's behaviour file of a node. */
export function setEngineBehaviour(node: SimNode, behaviour: EngineBehaviour | null): void {
  const file = path.join(node.root, "etc", "fake-engine.json");
  if (behaviour === null) fs.rmSync(file, { force: true });
  else writeJson(file, behaviour);
}

/** The lines every fake engine on the node prints while loading (pulse-proof texts). */
export function setEngineProofs(node: SimNode, lines: string[]): void {
  fs.writeFileSync(path.join(node.root, "etc", "fake-engine-proofs.txt"), lines.map((l) => `${l}\n`).join(""));
}
