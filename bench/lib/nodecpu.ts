/**
 * Where the simulated nodes get their CPU time from.
 *
 * On a cluster a node's sshd, shells, docker and engine run on that node's own CPU, never on the
 * machine that runs Pulumi. Here they share two cores with pulumi, the program and the provider
 * host, and Linux's scheduler makes that sharing lopsided: with autogroups on
 * (kernel.sched_autogroup_enabled), every session is a scheduling group of its own, with the
 * weight of a whole process, and sshd starts every SSH channel in a new session. Ten nodes
 * answering the plan-time look are ten groups against the one group of pulumi, the program and
 * the provider host, which then gets about a tenth of the machine.
 *
 * So the bench puts every node's sshd (and with it every session and engine it starts) and every
 * node's Docker Engine (dockerd and its containerd, and with them the shims and runc they start)
 * in one CPU cgroup with a tenth of the default weight, and the engines put their containers in
 * that group too (dockerd --cgroup-parent): the nodes use what the operator's processes leave,
 * the nearer model of machines of their own. Where no CPU cgroup can be made (no cgroup
 * filesystem, no cpu controller, not root), the nodes stay as they are and the report says so.
 * The site section measures the no-change up both ways in every round.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** cgroup v1 `cpu.shares` (default 1024) and v2 `cpu.weight` (default 100): a tenth of each. */
const V1_SHARES = 102;
const V2_WEIGHT = 10;

export interface NodeCpu {
  /** "cgroup v1 cpu.shares 102", "cgroup v2 cpu.weight 10", or why the nodes share the machine. */
  readonly how: string;
  readonly weighted: boolean;
  /**
   * The group as dockerd's --cgroup-parent (its path from each hierarchy's root): the containers
   * the nodes' engines start are in it, whatever `place` does later. Undefined where there is none.
   */
  readonly cgroupParent: string | undefined;
  /**
   * Moves these processes into the nodes' group (true) or to the hierarchy's root (false), where a
   * process of the machine is.
   */
  place(pids: number[], weighted: boolean): void;
  /**
   * The CPU time in ms the nodes' processes (and what they started) have used since the group
   * was made, or undefined where it cannot be read. v1 counts in a cpuacct group of the same
   * name, whatever the weighting; v2 only while the nodes are in their weighted group.
   */
  usedMs(): number | undefined;
  /** Moves every process left in the group back and removes it (also where dockerd made it in other hierarchies). */
  close(): void;
}

/** The v1 hierarchies (memory, pids, ...) where dockerd made the group for its containers: empty once they are gone. */
function removeEngineGroups(name: string): void {
  const v1 = "/sys/fs/cgroup";
  if (!existsSync(v1)) return;
  for (const h of readdirSync(v1)) {
    const dir = join(v1, h, name);
    try {
      if (existsSync(join(dir, "cgroup.procs"))) rmdirSync(dir);
    } catch {
      // not empty: a container's group is left (the site removes those it can)
    }
  }
}

interface Hierarchy {
  root: string;
  file: string;
  value: number;
  label: string;
}

function hierarchy(): Hierarchy | string {
  if (process.getuid?.() !== 0) return "not root: the nodes share the machine's CPU as they are";
  const v1 = "/sys/fs/cgroup/cpu";
  if (existsSync(join(v1, "cpu.shares")))
    return { root: v1, file: "cpu.shares", value: V1_SHARES, label: `cgroup v1 cpu.shares ${V1_SHARES}` };
  for (const v2 of ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]) {
    const controllers = join(v2, "cgroup.controllers");
    if (existsSync(controllers) && readFileSync(controllers, "utf8").split(/\s+/).includes("cpu")) {
      return { root: v2, file: "cpu.weight", value: V2_WEIGHT, label: `cgroup v2 cpu.weight ${V2_WEIGHT}` };
    }
  }
  return "no CPU cgroup controller: the nodes share the machine's CPU as they are";
}

function procsOf(dir: string): number[] {
  return readFileSync(join(dir, "cgroup.procs"), "utf8")
    .split("\n")
    .filter((l) => l !== "")
    .map(Number);
}

/** Writes pids one at a time (a cgroup.procs write takes one); a process gone meanwhile is skipped. */
function move(dir: string, pids: number[]): void {
  for (const pid of pids) {
    try {
      writeFileSync(join(dir, "cgroup.procs"), `${pid}\n`);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "ESRCH") throw e;
    }
  }
}

/**
 * Removes a group and the groups under it (dockerd's per container, of a container still there), deepest
 * first, each one's processes moved back to the hierarchy's root: a group is removed only empty.
 */
function removeGroup(root: string, dir: string): void {
  for (const d of readdirSync(dir, { withFileTypes: true })) if (d.isDirectory()) removeGroup(root, join(dir, d.name));
  move(root, procsOf(dir));
  rmdirSync(dir);
}

/**
 * Groups of earlier bench runs that ended without close (killed): their processes back, the group gone. The
 * run's sites were stopped first (./sites.ts), so what is left in them is a process of the machine.
 */
function removeStale(root: string, name: string): void {
  for (const d of readdirSync(root)) {
    const pid = new RegExp(`^${name}-(\\d+)$`).exec(d)?.[1];
    if (pid === undefined || existsSync(`/proc/${pid}`)) continue;
    removeGroup(root, join(root, d));
  }
}

/** The groups this run made and has not closed: a stopped bench closes them (closeOpenGroups). */
const open = new Set<NodeCpu>();

/** Closes every group this run still holds, after its sites were stopped (a bench ended by a signal). */
export function closeOpenGroups(): void {
  for (const g of [...open]) g.close();
}

/** v1's cpuacct hierarchy, where it is mounted apart from cpu (else cpu's own group has cpuacct.usage). */
const V1_CPUACCT = "/sys/fs/cgroup/cpuacct";

interface Account {
  usedMs(): number | undefined;
  place(pids: number[]): void;
  close(): void;
}

const NOT_COUNTED: Account = { usedMs: () => undefined, place: () => undefined, close: () => undefined };

/** ms of CPU from a counter file (`toMs` of its text), undefined when it cannot be read. */
function counter(file: string, toMs: (text: string) => number): () => number | undefined {
  return () => {
    try {
      const ms = toMs(readFileSync(file, "utf8"));
      return Number.isFinite(ms) ? ms : undefined;
    } catch {
      return undefined;
    }
  };
}

/**
 * Counting the nodes' CPU time: the v2 group's cpu.stat, cpuacct of a co-mounted v1 group, or a v1
 * cpuacct group of the same name.
 */
function account(h: Hierarchy, name: string, dir: string): Account {
  if (h.file === "cpu.weight")
    return {
      ...NOT_COUNTED,
      usedMs: counter(join(dir, "cpu.stat"), (t) => Number(/^usage_usec (\d+)$/m.exec(t)?.[1]) / 1000),
    };
  const nsToMs = (t: string) => Number(t) / 1e6;
  if (existsSync(join(dir, "cpuacct.usage")))
    return { ...NOT_COUNTED, usedMs: counter(join(dir, "cpuacct.usage"), nsToMs) };
  if (!existsSync(join(V1_CPUACCT, "cpuacct.usage"))) return NOT_COUNTED;
  removeStale(V1_CPUACCT, name);
  const adir = join(V1_CPUACCT, `${name}-${process.pid}`);
  mkdirSync(adir, { recursive: true });
  return {
    usedMs: counter(join(adir, "cpuacct.usage"), nsToMs),
    place: (pids) => move(adir, pids),
    close: () => {
      move(V1_CPUACCT, procsOf(adir));
      rmdirSync(adir);
    },
  };
}

export function nodeCpu(name: string): NodeCpu {
  const h = hierarchy();
  if (typeof h === "string") return { how: h, weighted: false, cgroupParent: undefined, ...NOT_COUNTED };
  removeStale(h.root, name);
  const dir = join(h.root, `${name}-${process.pid}`);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, h.file), `${h.value}\n`);
  } catch (e) {
    const how = `${h.label} could not be set (${(e as Error).message}): the nodes share the machine's CPU as they are`;
    return { how, weighted: false, cgroupParent: undefined, ...NOT_COUNTED };
  }
  const acct = account(h, name, dir);
  const group = `${name}-${process.pid}`;
  const cpu: NodeCpu = {
    how: h.label,
    weighted: true,
    cgroupParent: `/${group}`,
    place: (pids, weighted) => {
      move(weighted ? dir : h.root, pids);
      acct.place(pids);
    },
    usedMs: () => acct.usedMs(),
    close: () => {
      open.delete(cpu);
      removeGroup(h.root, dir);
      acct.close();
      removeEngineGroups(group);
    },
  };
  open.add(cpu);
  return cpu;
}
