// Faults a real site has and the tests inject: a node whose sshd dies (with its sessions), and
// leftovers to look for afterwards.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { engineDirs } from "./dockerd";
import { nodeEngineDir } from "./node";
import { inEngineContainer } from "./procs";
import { sshdConfigPath, sshdListeners, startSshd, waitForSshd } from "./sshd";
import type { SimNode, SimSite } from "./site";

function children(pid: number): number[] {
  try {
    return execFileSync("pgrep", ["-P", String(pid)], { encoding: "utf8" }).trim().split("\n").filter((l) => l !== "").map(Number);
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
  for (const end = Date.now() + timeoutMs; !cond(); ) {
    if (Date.now() > end) throw new Error(`test site: ${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The node comes back. */
export async function restartNodeSshd(site: SimSite, node: SimNode): Promise<void> {
  const log = path.join(node.root, "var", "log", "sshd.log");
  const rec = startSshd(sshdConfigPath(node.root), log);
  fs.writeFileSync(path.join(site.dir, "run", "procs", `${rec.pid}.json`), `${JSON.stringify({ ...rec, node: node.name })}\n`);
  await waitForSshd(node.ip, node.sshPort, rec, log, 15_000);
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
