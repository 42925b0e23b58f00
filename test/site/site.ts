// The simulated test site: one sshd and one Docker Engine per node, the node on its own loopback
// address with its own root (./node.ts), a shared client key, known_hosts, the site's registry
// with the site's images (./images.ts, ./registry.ts), and the fake DGPP repository. Everything
// lives under the site directory; stop() ends every process of the site by pid.
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { checkPlainPath, engineMetricsDir, engineOptionsDir, nodeBinDir, siteSourceDir } from "./paths";
import {
  isAlive,
  killTmuxServers,
  procStat,
  registeredProcesses,
  siteProcesses,
  terminate,
  type ProcRecord,
} from "./procs";
import { ENGINE, engineDirs, removeImage, seedDataRoot, startEngine, stopEngine, waitForEngine } from "./dockerd";
import { SITE_IMAGES, type SiteImageName } from "./images";
import { siteImageStore, type ImageStore } from "./imagestore";
import { buildNode, engineStart, HUB_PORT, nodeEngineDir, type SimNode } from "./node";
import { copyStorage, startRegistry } from "./registry";
import { checkConfig, ensurePrivsepDir, keygen, knownHostsLine, startSshd, waitForSshd } from "./sshd";
import { createDgppRepo } from "./dgpp";
import { needsRealParts } from "./lane";
import { provideRealVllm, realVllm } from "./realvllm";
import { listening } from "./net";
import { runNet, SSH_PORT } from "./alloc";

export type { SimNode } from "./node";
export { nodeEnv } from "./node";

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
  /** The site's registry: nvcr.io, ghcr.io, registry.example and Docker Hub names lead to port 80 there. */
  registryIp: string;
  stop(): Promise<void>;
}

export interface StartSiteOptions {
  dir: string;
  nodes: string[];
  /**
   * Where the nodes are (./alloc.ts): a test file passes its own, `allocate(__filename).site()`.
   * Default: `<$SM121_TEST_NET>.0.11` on, sshd port 2222 (the bench, the demo, the site CLI).
   */
  net?: string;
  /** Last octet of the first node's address (default 11). */
  firstIp?: number;
  /** Port of every node's sshd (default 2222). */
  sshPort?: number;
  /** The site images each node has at start (default: all of SITE_IMAGES on every node). */
  images?: SiteImageName[] | ((node: string) => SiteImageName[]);
  /**
   * The cgroup the nodes' Docker Engines put their containers under (dockerd --cgroup-parent;
   * default docker's /docker).
   */
  cgroupParent?: string;
  /**
   * The real vLLM on every node (./realvllm.ts): `vllm` on the node is the real one, the node's
   * HF cache (home/.cache/huggingface) holds the tiny model, and etc/vllm-cpu.env lets a container
   * of REAL_VLLM_IMAGE run it. Default: the fake engine only.
   */
  realVllm?: boolean;
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
  /** A series of /metrics and the text every one of its samples prints as its value ("NaN", "+Inf"). */
  metricValues?: Record<string, string>;
}

interface SiteFile extends Omit<SimSite, "stop"> {
  sshd: ProcRecord[];
}

function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`);
}

function register(dir: string, rec: ProcRecord, node: string): void {
  writeJson(path.join(dir, "run", "procs", `${rec.pid}.json`), { ...rec, node });
}

/** Each node's dockerd (and the mounts it makes) needs root; sshd and the rest do not. */
function requireRoot(): void {
  if (process.getuid?.() !== 0) {
    throw new Error(
      "test site: every simulated node runs a real Docker Engine (dockerd), which needs root; " +
        "run the tests as root (as CI does), e.g. sudo -E npm test",
    );
  }
}

type EngineSite = Parameters<typeof engineStart>[0];

/**
 * Starts the node's Docker Engine on a copy of the site images' data root (every site image, as
 * pulled from their registry), without the images the node is not to have.
 */
async function startNodeEngine(site: EngineSite, node: SimNode, store: ImageStore, images: string[]): Promise<void> {
  const s = engineStart(site, node);
  seedDataRoot(store.nodeData, s.dirs.data);
  const rec = startEngine(s);
  register(site.dir, rec, node.name);
  await waitForEngine(s, rec, 60_000);
  for (const ref of Object.keys(SITE_IMAGES).filter((r) => !images.includes(r))) await removeImage(s.dirs.sock, ref);
}

export async function startSite(opts: StartSiteOptions): Promise<SimSite> {
  needsRealParts("the simulated site");
  requireRoot();
  const dir = path.resolve(opts.dir);
  checkPlainPath("the site dir", dir);
  const firstIp = opts.firstIp ?? 11;
  const prefix = opts.net ?? `${runNet()}.0`;
  if (!/^127\.\d{1,3}\.\d{1,3}$/.test(prefix))
    throw new Error(`test site: net ${prefix} must be 127.X.Y (a loopback /24)`);
  const sshPort = opts.sshPort ?? SSH_PORT;
  if (opts.nodes.length === 0) throw new Error("test site: at least one node is needed");
  if (new Set(opts.nodes).size !== opts.nodes.length)
    throw new Error(`test site: node names repeat: ${opts.nodes.join(", ")}`);
  for (const n of opts.nodes)
    if (!/^[a-z][a-z0-9-]{0,30}$/.test(n))
      throw new Error(`test site: node name ${JSON.stringify(n)} must match [a-z][a-z0-9-]*`);
  if (firstIp < 2 || firstIp + opts.nodes.length - 1 > 254)
    throw new Error(`test site: ${prefix}.${firstIp} + ${opts.nodes.length} nodes leaves ${prefix}.2-254`);
  await stopStaleSite(dir);
  // Another run's sshd (or registry) on the same address would answer in place of ours.
  const registryIp = `${prefix}.${firstIp}`;
  const wanted = [
    ...opts.nodes.map((_, i) => ({ host: `${prefix}.${firstIp + i}`, port: sshPort })),
    { host: registryIp, port: 80 },
    { host: registryIp, port: HUB_PORT },
  ];
  const used = await Promise.all(wanted.map((w) => listening(w.host, w.port)));
  const taken = wanted.filter((_, i) => used[i] === true).map((w) => `${w.host}:${w.port}`);
  if (taken.length > 0)
    throw new Error(
      `test site: ${taken.join(", ")} already in use (another run, or one that crashed: ` +
        "`ss -ltnp` shows the process); stop it, or run in a network namespace of its own (unshare -n)",
    );
  fs.mkdirSync(dir, { recursive: true });
  for (const sub of [
    "nodes",
    "ssh",
    "shims",
    "run",
    "dgpp-src",
    "dgpp.git",
    "dgpp-calls.log",
    "site.json",
    "hf-hub",
    "hf-downloads.log",
    "registry",
  ])
    fs.rmSync(path.join(dir, sub), { recursive: true, force: true });
  try {
    ensurePrivsepDir();
    fs.cpSync(path.join(siteSourceDir(), "shims"), path.join(dir, "shims"), { recursive: true });
    // The hub the fake `hf download` serves (shims/hfhub/download.js).
    fs.cpSync(path.join(siteSourceDir(), "hf-hub"), path.join(dir, "hf-hub"), { recursive: true });
    // The fake engines parse argv with the engines' option tables, the same files sm121 checks recipes with.
    fs.cpSync(engineOptionsDir(), path.join(dir, "shims", "engine", "options"), {
      recursive: true,
      filter: (f) => !f.endsWith(".ts"),
    });
    fs.cpSync(engineMetricsDir(), path.join(dir, "shims", "engine", "metrics"), { recursive: true });
    const store = await siteImageStore();
    const reg = (f: string) => path.join(dir, "registry", f);
    copyStorage(store.registry, reg("storage"));
    const registry = await startRegistry({
      storage: reg("storage"),
      config: reg("config.yml"),
      log: reg("registry.log"),
      host: registryIp,
      port: 80,
    });
    register(dir, registry.proc, "");
    register(dir, await startHub(dir, registryIp), "");
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
      return knownHostsLine(
        n.ip,
        n.sshPort,
        keygen(path.join(n.root, "etc", "ssh", "ssh_host_ed25519_key"), `${n.name}-host`),
      );
    });
    fs.writeFileSync(knownHosts, `${lines.join("\n")}\n`);
    const base = { dir, user: os.userInfo().username, nodes, clientKey, knownHosts, nodeBin: nodeBinDir(), registryIp };
    const engineBase = { ...base, ...(opts.cgroupParent !== undefined && { cgroupParent: opts.cgroupParent }) };
    const sshd: ProcRecord[] = [];
    const waits: Promise<void>[] = [];
    const all = Object.keys(SITE_IMAGES) as SiteImageName[];
    const images = (n: string): SiteImageName[] =>
      opts.images === undefined ? all : typeof opts.images === "function" ? opts.images(n) : opts.images;
    const real = opts.realVllm === true ? realVllm() : undefined;
    for (const [i, node] of nodes.entries()) {
      const cfg = buildNode(base, node, real === undefined ? {} : { vllm: "vllm-cpu" });
      if (real !== undefined) provideRealVllm(real, node.root, path.join(node.home, ".cache", "huggingface"), i);
      checkConfig(cfg);
      const log = path.join(node.root, "var", "log", "sshd.log");
      const rec = startSshd(cfg, log);
      register(dir, rec, node.name);
      sshd.push(rec);
      waits.push(waitForSshd(node.ip, node.sshPort, rec, log, 15000));
      waits.push(startNodeEngine(engineBase, node, store, images(node.name)));
    }
    const { repo, revs } = createDgppRepo(dir);
    await Promise.all(waits);
    const file: SiteFile = { ...base, dgppRepo: repo, dgppRevs: revs, sshd };
    writeJson(path.join(dir, "site.json"), file);
    return { ...file, stop: () => stopStaleSite(dir) };
  } catch (err) {
    await stopStaleSite(dir);
    throw err;
  }
}

/** The site recorded in <dir>/site.json (for the CLI and for tests in other processes). */
export function loadSite(dir: string): SimSite {
  const abs = path.resolve(dir);
  const f = JSON.parse(fs.readFileSync(path.join(abs, "site.json"), "utf8")) as SiteFile;
  return {
    dir: f.dir,
    user: f.user,
    nodes: f.nodes,
    clientKey: f.clientKey,
    knownHosts: f.knownHosts,
    dgppRepo: f.dgppRepo,
    dgppRevs: f.dgppRevs,
    nodeBin: f.nodeBin,
    registryIp: f.registryIp,
    stop: () => stopStaleSite(abs),
  };
}

/**
 * Ends every process of the site in `dir` (also of a crashed earlier run): each node's sshd, its
 * tmux server, its Docker Engine with every container (./dockerd.ts stopEngine), every process
 * recorded under <dir>/run/procs (the registry, fake engines), then anything left whose
 * environment or command line names the site (a containerd or shim of a killed dockerd). Files
 * stay. Idempotent.
 */
export async function stopStaleSite(dir: string): Promise<void> {
  const abs = path.resolve(dir);
  if (!fs.existsSync(abs)) return;
  const registered = registeredProcesses(abs);
  await terminate(
    registered.filter((r) => r.what.startsWith("sshd ")),
    2000,
  );
  killTmuxServers(abs);
  const nodesDir = path.join(abs, "nodes");
  const nodeRoots = fs.existsSync(nodesDir) ? fs.readdirSync(nodesDir).map((n) => path.join(nodesDir, n)) : [];
  await Promise.all(
    nodeRoots.map((root) => {
      const dirs = engineDirs(nodeEngineDir({ root }));
      return stopEngine(
        dirs,
        registered.filter((r) => r.what === `${ENGINE}${dirs.dir}`),
        5000,
      );
    }),
  );
  await terminate(registered, 3000);
  for (let round = 0; round < 5; round++) {
    const left = siteProcesses(abs);
    if (left.length === 0) break;
    await terminate(left, round === 0 ? 1500 : 200);
  }
  const reg = path.join(abs, "run", "procs");
  for (const r of registeredProcesses(abs))
    if (!isAlive(r.pid, r.start)) fs.rmSync(path.join(reg, `${r.pid}.json`), { force: true });
}

export function findNode(site: SimSite, name: string): SimNode {
  const node = site.nodes.find((n) => n.name === name);
  if (node === undefined)
    throw new Error(`test site: no node ${name} (nodes: ${site.nodes.map((n) => n.name).join(", ")})`);
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

/** The hub's HTTP stand-in (shims/hfhub/serve.js) on the registry's address, once it listens. */
async function startHub(dir: string, host: string): Promise<ProcRecord> {
  fs.mkdirSync(path.join(dir, "run"), { recursive: true });
  const log = fs.openSync(path.join(dir, "run", "hub.log"), "a");
  const serve = path.join(dir, "shims", "hfhub", "serve.js");
  const child = spawn(process.execPath, [serve, path.join(dir, "hf-hub"), host, String(HUB_PORT)], {
    detached: true,
    stdio: ["ignore", log, log],
  });
  fs.closeSync(log);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error("test site: could not start the hub's stand-in");
  const proc = { pid, start: procStat(pid)?.start ?? null, what: `hub ${serve}` };
  for (let i = 0; i < 100 && !(await listening(host, HUB_PORT)); i++) await new Promise((r) => setTimeout(r, 50));
  if (!(await listening(host, HUB_PORT))) throw new Error(`test site: the hub's stand-in did not listen on ${host}`);
  return proc;
}
