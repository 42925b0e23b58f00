/**
 * SSH connections and exec channels per node, counted on the node side.
 *
 * The site's sshd logs at LogLevel INFO: one "Accepted publickey" line per connection, but
 * nothing per channel (sshd logs "Starting session: command ..." only from VERBOSE). Every exec
 * channel runs the node's ForceCommand, `<root>/bin/sim-login`, so the harness rewrites that
 * node-local wrapper (a file of the running site, not of test/) to append one line per channel to
 * `<root>/var/log/bench-sessions.log`: the time (/proc/uptime) and $SSH_CONNECTION, whose client
 * port names the connection. Counts are taken between two snapshots.
 */
import { existsSync, lstatSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SimNode, SimSite } from "./site";

const LOG = "var/log/bench-sessions.log";
/** When the machine booted (s since the epoch, to 10 ms): the session log has each channel's /proc/uptime. */
const BOOT_S = Date.now() / 1000 - Number(readFileSync("/proc/uptime", "utf8").split(" ")[0]);
/** The same for the node's docker CLI: one line per `docker` call (its subcommand). */
const DOCKER_LOG = "var/log/bench-docker.log";

/** Puts one logging line before the `exec` of a node's bin/ wrapper (written by test/site/site.ts). */
function addLine(file: string, log: string, line: string): void {
  const text = readFileSync(file, "utf8");
  if (text.includes(log)) return;
  const i = text.lastIndexOf("\nexec ");
  if (i === -1) throw new Error(`${file}: no exec line to put the counter before`);
  writeFileSync(file, `${text.slice(0, i)}\n${line}${text.slice(i)}`, { mode: 0o755 });
}

export function installSessionCounter(site: SimSite): void {
  for (const n of site.nodes) {
    addLine(
      join(n.root, "bin", "sim-login"),
      LOG,
      // The shell's own builtins only (no `date`): the counter must not add a process to what it counts.
      `read -r up _ < /proc/uptime; printf '%s %s\\n' "$up" "\${SSH_CONNECTION:-none}" >> '${join(n.root, LOG)}'`,
    );
    // The node's docker is a link to the real CLI: in its place, a wrapper that counts and runs it.
    const docker = join(n.root, "bin", "docker");
    if (!lstatSync(docker).isSymbolicLink()) continue;
    const cli = realpathSync(docker);
    rmSync(docker);
    const count = `printf '%s\\n' "\${1:--}" >> '${join(n.root, DOCKER_LOG)}'`;
    writeFileSync(docker, `#!/bin/sh\n${count}\nexec '${cli}' "$@"\n`, { mode: 0o755 });
  }
}

interface Mark {
  sessions: number;
  accepted: number;
  docker: number;
}

/** Where each node's logs are now. */
export type Snapshot = Map<string, Mark>;

function lines(file: string): string[] {
  return existsSync(file)
    ? readFileSync(file, "utf8")
        .split("\n")
        .filter((l) => l !== "")
    : [];
}

function sshdLog(n: SimNode): string {
  return join(n.root, "var", "log", "sshd.log");
}

export function snapshot(site: SimSite): Snapshot {
  const s: Snapshot = new Map();
  for (const n of site.nodes) {
    s.set(n.name, {
      sessions: lines(join(n.root, LOG)).length,
      accepted: lines(sshdLog(n)).filter((l) => l.includes("Accepted publickey")).length,
      docker: lines(join(n.root, DOCKER_LOG)).length,
    });
  }
  return s;
}

export interface NodeCount {
  node: string;
  /** Distinct client ports among the channels (connections that opened a channel). */
  connections: number;
  /** "Accepted publickey" lines of sshd: every authenticated connection. */
  accepted: number;
  /** Exec channels (ForceCommand runs). */
  channels: number;
  /** When each channel started, ms since the epoch. */
  channelTimes: number[];
  /** `docker` invocations on the node (the real CLI), by subcommand. */
  docker: number;
  dockerBy: Record<string, number>;
}

/** Connections and channels per node since `from`; only nodes with any, unless `all`. */
export function countSince(site: SimSite, from: Snapshot, all = false): NodeCount[] {
  const out: NodeCount[] = [];
  for (const n of site.nodes) {
    const m = from.get(n.name) ?? { sessions: 0, accepted: 0, docker: 0 };
    const docker = lines(join(n.root, DOCKER_LOG))
      .slice(m.docker)
      .map((l) => l.trim());
    const dockerBy: Record<string, number> = {};
    for (const d of docker) dockerBy[d] = (dockerBy[d] ?? 0) + 1;
    const sess = lines(join(n.root, LOG)).slice(m.sessions);
    const accepted = lines(sshdLog(n)).filter((l) => l.includes("Accepted publickey")).length - m.accepted;
    const ports = new Set(sess.map((l) => l.split(" ").slice(1, 3).join(":")));
    const c = {
      node: n.name,
      connections: ports.size,
      accepted,
      channels: sess.length,
      channelTimes: sess.map((l) => (BOOT_S + Number(l.split(" ")[0])) * 1000),
      docker: docker.length,
      dockerBy,
    };
    if (all || c.accepted > 0 || c.channels > 0 || c.docker > 0) out.push(c);
  }
  return out;
}

/** Counts of `f`'s run: what it returned, and per node the connections and channels it caused. */
export async function counted<T>(
  site: SimSite,
  nodes: readonly string[],
  f: () => Promise<T>,
): Promise<{ value: T; counts: NodeCount[] }> {
  const before = snapshot(site);
  const value = await f();
  const counts = countSince(site, before, true).filter(
    (c) => nodes.includes(c.node) || c.accepted > 0 || c.channels > 0,
  );
  return { value, counts };
}
