// Finding and ending the processes of a simulated site, always by pid (and by
// process group where a shim made one). A pid is trusted only together with its
// start time from /proc/<pid>/stat, because pids are reused quickly here.
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";

export interface ProcRecord {
  pid: number;
  start: string | null;
  what: string;
}

interface Stat {
  state: string;
  ppid: number;
  pgid: number;
  start: string;
}

export function procStat(pid: number): Stat | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  const rest = text.slice(text.lastIndexOf(")") + 2).split(" ");
  return { state: rest[0] ?? "", ppid: Number(rest[1]), pgid: Number(rest[2]), start: rest[19] ?? "" };
}

export function isAlive(pid: number, start?: string | null): boolean {
  const st = procStat(pid);
  if (st === null || st.state === "Z" || st.state === "X") return false;
  return start === undefined || start === null || st.start === start;
}

function readNul(file: string): string[] {
  try {
    return fs
      .readFileSync(file, "utf8")
      .split("\0")
      .filter((s) => s.length > 0);
  } catch {
    return [];
  }
}

function selfAndAncestors(): Set<number> {
  const out = new Set<number>();
  let pid = process.pid;
  while (pid > 1 && !out.has(pid)) {
    out.add(pid);
    const st = procStat(pid);
    if (st === null) break;
    pid = st.ppid;
  }
  return out;
}

/** Every live process `pid` started, and what those started, as records (deepest last). */
export function descendants(pid: number): ProcRecord[] {
  const children = new Map<number, ProcRecord[]>();
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const st = procStat(Number(name));
    if (st === null || st.state === "Z") continue;
    const rec = { pid: Number(name), start: st.start, what: readNul(`/proc/${name}/cmdline`).join(" ").slice(0, 200) };
    children.set(st.ppid, [...(children.get(st.ppid) ?? []), rec]);
  }
  const out: ProcRecord[] = [];
  for (let next = children.get(pid) ?? []; next.length > 0;) {
    out.push(...next);
    next = next.flatMap((r) => children.get(r.pid) ?? []);
  }
  return out;
}

/** Every live process whose environment names the site (SIM_SITE_DIR) or whose command line mentions it. */
export function siteProcesses(dir: string): ProcRecord[] {
  const skip = selfAndAncestors();
  const out: ProcRecord[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (skip.has(pid)) continue;
    const env = readNul(`/proc/${pid}/environ`);
    const argv = readNul(`/proc/${pid}/cmdline`);
    const mentions = env.includes(`SIM_SITE_DIR=${dir}`) || argv.some((a) => a === dir || a.includes(`${dir}/`));
    const st = procStat(pid);
    if (mentions && st !== null && st.state !== "Z")
      out.push({ pid, start: st.start, what: argv.join(" ").slice(0, 200) });
  }
  return out;
}

/** The Docker container the process runs in: its cgroup is <parent>/<id> (docker's /docker/<id>); null if none. */
export function containerOf(pid: number): string | null {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/cgroup`, "utf8");
  } catch {
    return null;
  }
  return /\/([0-9a-f]{64})$/m.exec(text)?.[1] ?? null;
}

/**
 * Whether the process runs in a container of the Docker Engine whose data root is `dataRoot`.
 * (shims/lib/proc.js onNode answers the same for nvidia-smi, in the shims' language.)
 */
export function inEngineContainer(pid: number, dataRoot: string): boolean {
  const id = containerOf(pid);
  return id !== null && fs.existsSync(path.join(dataRoot, "containers", id));
}

/** The records the shims and the harness wrote under <dir>/run/procs/. */
export function registeredProcesses(dir: string): ProcRecord[] {
  const reg = path.join(dir, "run", "procs");
  if (!fs.existsSync(reg)) return [];
  const out: ProcRecord[] = [];
  for (const f of fs.readdirSync(reg)) {
    try {
      const rec = JSON.parse(fs.readFileSync(path.join(reg, f), "utf8")) as Partial<ProcRecord>;
      if (typeof rec.pid === "number") out.push({ pid: rec.pid, start: rec.start ?? null, what: rec.what ?? "" });
    } catch {
      continue;
    }
  }
  return out;
}

function send(rec: ProcRecord, sig: NodeJS.Signals): void {
  if (!isAlive(rec.pid, rec.start)) return;
  const st = procStat(rec.pid);
  try {
    process.kill(st !== null && st.pgid === rec.pid ? -rec.pid : rec.pid, sig);
  } catch {
    // gone meanwhile
  }
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** SIGTERM (to the group of a group leader), wait up to graceMs, then SIGKILL. */
export async function terminate(recs: ProcRecord[], graceMs: number): Promise<void> {
  const live = recs.filter((r) => isAlive(r.pid, r.start));
  for (const r of live) send(r, "SIGTERM");
  const deadline = Date.now() + graceMs;
  while (Date.now() < deadline && live.some((r) => isAlive(r.pid, r.start))) await pause(50);
  for (const r of live) send(r, "SIGKILL");
  const hard = Date.now() + 3000;
  while (Date.now() < hard && live.some((r) => isAlive(r.pid, r.start))) await pause(50);
}

/** Ask each node's tmux server (sockets under <node>/tmp/tmux-*) to exit. */
export function killTmuxServers(dir: string): void {
  const nodes = path.join(dir, "nodes");
  if (!fs.existsSync(nodes)) return;
  for (const node of fs.readdirSync(nodes)) {
    const tmp = path.join(nodes, node, "tmp");
    if (!fs.existsSync(tmp)) continue;
    for (const sub of fs.readdirSync(tmp).filter((d) => d.startsWith("tmux-"))) {
      for (const sock of fs.readdirSync(path.join(tmp, sub))) {
        spawnSync("tmux", ["-S", path.join(tmp, sub, sock), "kill-server"], { stdio: "ignore", timeout: 5000 });
      }
    }
  }
}

/**
 * The processes a session on `node` started that still run: every process whose environment has
 * the node's root (sshd's SetEnv) and an SSH connection, i.e. a login's own descendants. A daemon
 * the node runs for itself (its sshd, its Docker Engine) has no SSH_CONNECTION; a container's
 * processes have neither.
 */
export function sessionLeftovers(node: { root: string }): ProcRecord[] {
  const skip = selfAndAncestors();
  const out: ProcRecord[] = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (skip.has(pid)) continue;
    const env = readNul(`/proc/${pid}/environ`);
    if (!env.includes(`SIM_NODE_ROOT=${node.root}`) || !env.some((v) => v.startsWith("SSH_CONNECTION="))) continue;
    const st = procStat(pid);
    if (st !== null && st.state !== "Z")
      out.push({ pid, start: st.start, what: readNul(`/proc/${pid}/cmdline`).join(" ") });
  }
  return out;
}
