// Faults a real site has and the tests inject: a node whose sshd dies (with its sessions), a node
// whose Docker Engine is stopped, a node that reboots, and leftovers to look for afterwards.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { randomUUID } from "node:crypto";
import { ENGINE, engineDirs, startEngine, stopEngine, waitForEngine } from "./dockerd";
import { engineStart, nodeEngineDir } from "./node";
import { inEngineContainer, registeredProcesses } from "./procs";
import { bootIdPath, sshdConfigPath, sshdListeners, startSshd, waitForSshd } from "./sshd";
import type { SimNode, SimSite } from "./site";

function children(pid: number): number[] {
  try {
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter((l) => l !== "")
      .map(Number);
  } catch {
    return [];
  }
}

/** The node goes off the network: its sshd and every session it serves die at once. */
export function killNodeSshd(site: SimSite, node: SimNode): void {
  for (const listener of sshdListeners(site.dir, node.root)) {
    for (const session of children(listener.pid)) {
      try {
        process.kill(session, "SIGKILL");
      } catch {
        // already gone
      }
    }
    process.kill(listener.pid, "SIGKILL");
  }
}

/** Resolves once `cond` holds (checked every 50 ms); rejects after `timeoutMs` naming `what`. */
export async function waitFor(what: string, cond: () => boolean, timeoutMs = 120_000): Promise<void> {
  for (const end = Date.now() + timeoutMs; !cond();) {
    if (Date.now() > end) throw new Error(`test site: ${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The node comes back. */
export async function restartNodeSshd(site: SimSite, node: SimNode): Promise<void> {
  const log = path.join(node.root, "var", "log", "sshd.log");
  const rec = startSshd(sshdConfigPath(node.root), log);
  fs.writeFileSync(
    path.join(site.dir, "run", "procs", `${rec.pid}.json`),
    `${JSON.stringify({ ...rec, node: node.name })}\n`,
  );
  await waitForSshd(node.ip, node.sshPort, rec, log, 15_000);
}

/**
 * The node's Docker Engine stops, as `systemctl stop docker` stops it (without live-restore its
 * containers stop with it): the docker CLI then fails with "Cannot connect to the Docker daemon".
 */
export async function stopNodeEngine(site: SimSite, node: SimNode): Promise<void> {
  const dirs = engineDirs(nodeEngineDir(node));
  await stopEngine(
    dirs,
    registeredProcesses(site.dir).filter((r) => r.what === `${ENGINE}${dirs.dir}`),
    5000,
  );
}

/** The node's Docker Engine starts again, with the images and the (stopped) containers it had. */
export async function restartNodeEngine(site: SimSite, node: SimNode): Promise<void> {
  const s = engineStart(site, node);
  const rec = startEngine(s);
  const record = `${JSON.stringify({ ...rec, node: node.name })}\n`;
  fs.writeFileSync(path.join(site.dir, "run", "procs", `${rec.pid}.json`), record);
  await waitForEngine(s, rec, 60_000);
}

/** Engine processes (also in the node's containers), tmux servers and recipe scripts of a node still running. */
export function leftovers(node: SimNode): string[] {
  return nodeProcesses(node, /fake-engine|tmux|dgpp-manager|start\.sh/);
}

/**
 * The processes of a node whose command line matches `pattern`, as "pid cmdline": started on it
 * (its SIM_NODE_ROOT), or in a container of its Docker Engine.
 */
export function nodeProcesses(node: SimNode, pattern: RegExp): string[] {
  const out: string[] = [];
  const data = engineDirs(nodeEngineDir(node)).data;
  for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    let environ: string;
    let cmd: string;
    try {
      environ = fs.readFileSync(`/proc/${pid}/environ`, "utf8");
      cmd = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ").trim();
    } catch {
      continue;
    }
    if (!environ.includes(`SIM_NODE_ROOT=${node.root}\0`) && !inEngineContainer(Number(pid), data)) continue;
    if (pattern.test(cmd)) out.push(`${pid} ${cmd}`);
  }
  return out;
}

/**
 * The node reboots: it goes off the network, every process started on it ends (its tmux server,
 * engines, tripwires), its Docker Engine stops with its containers, and it comes back with a new
 * boot id, its Docker Engine started again (the containers it had are stopped; none starts by
 * itself) and its sshd listening. Nothing of sm121 starts by itself after it.
 */
export async function rebootNode(site: SimSite, node: SimNode): Promise<void> {
  killNodeSshd(site, node);
  await stopNodeEngine(site, node);
  for (const line of nodeProcesses(node, /./)) {
    try {
      process.kill(Number(line.split(" ")[0]), "SIGKILL");
    } catch {
      // already gone
    }
  }
  // In place: the sshd's bind mount holds this file's inode.
  fs.writeFileSync(bootIdPath(node.root), `${randomUUID()}\n`);
  await restartNodeEngine(site, node);
  await restartNodeSshd(site, node);
}
