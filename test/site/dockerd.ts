// A real Docker Engine (Debian's docker.io: dockerd, the containerd it starts, runc) per simulated
// node, and for the site's image builder. Each runs in a mount, UTS and IPC namespace of its own
// (unshare): the node's host name, the node's /etc/hosts (where the registries' names lead to the
// site's registry), the node's own /etc/docker, a private /run (containerd's shim sockets), its
// own /dev/shm and System V IPC (what `--ipc host` shares), and its overlay mounts, which go with
// the namespace when its last process ends. Its roots, socket,
// pidfile and log are under the node's directory; it is started and stopped by pid.
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { containerOf, isAlive, procStat, registeredProcesses, terminate, type ProcRecord } from "./procs";

/** What `what` of a node's engine process record starts with. */
export const ENGINE = "dockerd ";

/** Where an engine keeps everything, under its directory (a node's <root>/docker). */
export interface EngineDirs {
  dir: string;
  data: string;
  exec: string;
  sock: string;
  pid: string;
  /** Bind-mounted on /etc/docker in the engine's namespace (key.json, daemon.json, certs.d). */
  etc: string;
}

export function engineDirs(dir: string): EngineDirs {
  return {
    dir,
    data: path.join(dir, "data"),
    exec: path.join(dir, "exec"),
    sock: path.join(dir, "docker.sock"),
    pid: path.join(dir, "docker.pid"),
    etc: path.join(dir, "etc"),
  };
}

export interface EngineStart {
  dirs: EngineDirs;
  hostname: string;
  /** The file the engine (and every container with --network host) sees as /etc/hosts. */
  hosts: string;
  log: string;
  /** The engine's whole environment (PATH first: the NVIDIA hook stand-in is looked up there). */
  env: Record<string, string>;
  /** More dockerd flags: registries, the OCI runtime. */
  args: string[];
}

// Runs as root in the new namespaces, then becomes dockerd (the pid the site records).
const LAUNCH = [
  "set -eu",
  "hosts=$1 etc=$2 name=$3; shift 3",
  'mount --bind "$hosts" /etc/hosts',
  'if [ -d /etc/docker ]; then mount --bind "$etc" /etc/docker; fi',
  "mount -t tmpfs -o mode=0755 sm121-node-run /run",
  // The node's own shared memory, as each machine has: a container run with --ipc host gets its
  // node's, not the machine's (vLLM takes ranks that see one /dev/shm for ranks of one node).
  "mount -t tmpfs -o mode=1777 sm121-node-shm /dev/shm",
  'hostname "$name"',
  'exec dockerd "$@"',
].join("\n");

/**
 * A node's data root as a copy of `template` (a stopped dockerd's data root with images pulled):
 * the layers' files (overlay2/<id>/diff/...) hard-linked, as overlayfs never writes a lower layer
 * and docker replaces a layer rather than change it; everything else (the databases dockerd and
 * containerd write in place, the tag store, the layers' metadata) copied. A device node outside
 * the layers (volumes/backingFsBlockDev) is left out: dockerd makes it at start.
 */
export function seedDataRoot(template: string, data: string): void {
  const copy = (src: string, dst: string, linked: boolean): void => {
    fs.mkdirSync(dst, { recursive: true, mode: fs.statSync(src).mode & 0o7777 });
    for (const e of fs.readdirSync(src, { withFileTypes: true })) {
      const from = path.join(src, e.name);
      const to = path.join(dst, e.name);
      if (e.isDirectory()) {
        copy(from, to, linked || (e.name === "diff" && path.basename(path.dirname(src)) === "overlay2"));
      } else if (e.isSymbolicLink()) fs.symlinkSync(fs.readlinkSync(from), to);
      else if (linked) fs.linkSync(from, to);
      else if (e.isFile()) fs.copyFileSync(from, to);
    }
    fs.chmodSync(dst, fs.statSync(src).mode & 0o7777);
  };
  copy(template, data, false);
}

/** Starts dockerd detached (its own session), in its own mount, UTS and IPC namespaces. */
export function startEngine(s: EngineStart): ProcRecord {
  const d = s.dirs;
  for (const dir of [d.data, d.exec, d.etc, path.dirname(s.log)]) fs.mkdirSync(dir, { recursive: true });
  fs.rmSync(d.sock, { force: true });
  const flags = [
    ...["--data-root", d.data, "--exec-root", d.exec, "-H", `unix://${d.sock}`, "--pidfile", d.pid],
    ...["--config-file", path.join(d.etc, "daemon.json")],
    // No bridge, no iptables, no forwarding: the site's containers run with --network host, and the
    // machine's (or the test namespace's) network and kernel settings stay as they are.
    ...["--iptables=false", "--ip6tables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false"],
    "--storage-driver=overlay2",
    ...s.args,
  ];
  fs.writeFileSync(path.join(d.etc, "daemon.json"), "{}\n");
  const out = fs.openSync(s.log, "a");
  const namespaces = ["--mount", "--uts", "--ipc", "--propagation", "private"];
  const launch = ["bash", "-c", LAUNCH, "sm121-dockerd", s.hosts, d.etc, s.hostname, ...flags];
  const child = spawn("unshare", [...namespaces, ...launch], {
    detached: true,
    env: s.env,
    stdio: ["ignore", out, out],
  });
  fs.closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`test site: could not start dockerd for ${d.dir}`);
  return { pid, start: procStat(pid)?.start ?? null, what: `${ENGINE}${d.dir}` };
}

export interface ApiAnswer {
  status: number;
  body: string;
}

/** One request to the Docker Engine API on its unix socket (what the docker CLI sends). */
export function engineApi(sock: string, method: string, url: string, timeoutMs = 60_000): Promise<ApiAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ socketPath: sock, method, path: url, timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (c: string) => (body += c));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
      res.on("error", reject);
    });
    req.on("timeout", () => req.destroy(new Error(`${method} ${url} on ${sock}: no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

function logTail(log: string): string {
  return fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").slice(-15).join("\n") : "";
}

/** Waits until the engine answers /_ping; fails early, with its log, when it exited. */
export async function waitForEngine(
  s: Pick<EngineStart, "dirs" | "log">,
  rec: ProcRecord,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!isAlive(rec.pid, rec.start))
      throw new Error(`test site: dockerd for ${s.dirs.dir} exited at startup:\n${logTail(s.log)}`);
    if (fs.existsSync(s.dirs.sock)) {
      const r = await engineApi(s.dirs.sock, "GET", "/_ping", 2000).catch(() => null);
      if (r !== null && r.status === 200) return;
    }
    if (Date.now() > deadline)
      throw new Error(
        `test site: dockerd for ${s.dirs.dir} did not answer within ${timeoutMs} ms (log: ${s.log}):\n` +
          logTail(s.log),
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** `docker pull REF` through the engine's API: resolves once the image is there, else fails with the engine's error. */
export async function pullImage(sock: string, ref: string): Promise<void> {
  const at = ref.lastIndexOf(":");
  const [name, tag] = at > ref.lastIndexOf("/") ? [ref.slice(0, at), ref.slice(at + 1)] : [ref, "latest"];
  const r = await engineApi(
    sock,
    "POST",
    `/images/create?fromImage=${encodeURIComponent(name)}&tag=${encodeURIComponent(tag)}`,
    120_000,
  );
  // The progress stream: one JSON object per line; a failure is a line with "error".
  const failed = r.body.split("\n").find((l) => l.includes('"error"'));
  if (r.status !== 200 || failed !== undefined)
    throw new Error(
      `test site: pulling ${ref} into ${sock} failed (HTTP ${r.status}): ${failed ?? r.body.slice(0, 500)}`,
    );
}

/** `docker image rm REF` through the engine's API (a name of an image other names keep: only the tag goes). */
export async function removeImage(sock: string, ref: string): Promise<void> {
  const r = await engineApi(sock, "DELETE", `/images/${ref}`);
  if (r.status !== 200) throw new Error(`test site: removing ${ref} from ${sock} failed (HTTP ${r.status}): ${r.body}`);
}

/** The engines the site recorded under <site>/run/procs (one per node). */
export function engineProcesses(siteDir: string): ProcRecord[] {
  return registeredProcesses(siteDir).filter((r) => r.what.startsWith(ENGINE));
}

/** The processes `recs` started (a dockerd's containerd), as records. */
function childrenOf(recs: ProcRecord[]): ProcRecord[] {
  const parents = new Set(recs.filter((r) => isAlive(r.pid, r.start)).map((r) => r.pid));
  if (parents.size === 0) return [];
  const out: ProcRecord[] = [];
  for (const pid of fs
    .readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number)) {
    const st = procStat(pid);
    if (st !== null && parents.has(st.ppid)) out.push({ pid, start: st.start, what: `child of ${st.ppid}` });
  }
  return out;
}

/** Each engine's dockerd and the containerd it started (what starts the shims, runc and the containers). */
export function engineTree(siteDir: string): number[] {
  const engines = engineProcesses(siteDir);
  return [...engines, ...childrenOf(engines)].filter((r) => isAlive(r.pid, r.start)).map((r) => r.pid);
}

/** The containers an engine's containerd runs a task for: the task directories of its shims. */
function taskDirs(dirs: EngineDirs): string[] {
  const tasks = path.join(dirs.exec, "containerd", "daemon", "io.containerd.runtime.v2.task", "moby");
  return fs.existsSync(tasks) ? fs.readdirSync(tasks).map((id) => path.join(tasks, id)) : [];
}

/** The container processes of an engine: each container's init, as its shim wrote it, with the container's id. */
function containerInits(dirs: EngineDirs): Array<{ id: string; pid: number }> {
  const out: Array<{ id: string; pid: number }> = [];
  for (const dir of taskDirs(dirs)) {
    try {
      out.push({ id: path.basename(dir), pid: Number(fs.readFileSync(path.join(dir, "init.pid"), "utf8").trim()) });
    } catch {
      continue;
    }
  }
  return out;
}

/**
 * Stops an engine and everything it runs, also when it crashed: every container's init is killed
 * (its pid namespace with it; a container that ignores SIGTERM must not hold the site up), then
 * dockerd and its containerd get SIGTERM, then SIGKILL; `graceMs` bounds the wait for the
 * engine to clean the ended containers up. What is left of the
 * engine (a shim, a containerd of a dockerd that was killed) names the node's directory in its
 * command line: the site's final sweep ends it.
 */
export async function stopEngine(dirs: EngineDirs, recs: ProcRecord[], graceMs: number): Promise<void> {
  let killed = false;
  for (const c of containerInits(dirs)) {
    // A pid from a file is trusted only while it still runs in that container (pids are reused).
    if (containerOf(c.pid) !== c.id) continue;
    try {
      process.kill(c.pid, "SIGKILL");
      killed = true;
    } catch {
      // gone meanwhile
    }
  }
  // A running engine cleans each ended container up (its task, its shim, its containerd record)
  // before it lists it as not running; stopped in the middle of that, it retries for a second.
  const deadline = Date.now() + graceMs;
  const alive = recs.some((r) => isAlive(r.pid, r.start));
  while (killed && alive && Date.now() < deadline) {
    const running = await engineApi(dirs.sock, "GET", "/containers/json", 2000).catch(() => null);
    if (running === null || running.status !== 200 || running.body.trim() === "[]") break;
    await new Promise((r) => setTimeout(r, 20));
  }
  // dockerd waits about a second for the containerd it started to stop, and retries about a second
  // where it was still removing a container's containerd record: both get SIGTERM at once, and
  // SIGKILL soon (the tasks, and with them the containers' cgroups, are gone by now).
  await terminate([...recs, ...childrenOf(recs)], 500);
  removeCgroups(dirs);
}

/**
 * The cgroups of the engine's containers that are left (empty) when the engine could not clean up
 * (it was killed, or crashed): under docker's /docker, or a --cgroup-parent, in every hierarchy.
 */
function removeCgroups(dirs: EngineDirs): void {
  const containers = path.join(dirs.data, "containers");
  const ids = new Set(fs.existsSync(containers) ? fs.readdirSync(containers) : []);
  const root = "/sys/fs/cgroup";
  if (ids.size === 0 || !fs.existsSync(root)) return;
  const subdirs = (dir: string): string[] => {
    try {
      const entries = fs.readdirSync(dir, { withFileTypes: true });
      return entries.filter((e) => e.isDirectory()).map((e) => path.join(dir, e.name));
    } catch {
      return [];
    }
  };
  for (const parent of subdirs(root).flatMap((h) => [h, ...subdirs(h)])) {
    for (const dir of subdirs(parent).filter((d) => ids.has(path.basename(d)))) {
      try {
        fs.rmdirSync(dir);
      } catch {
        // still has a process, or a child group
      }
    }
  }
}
