// The site's docker daemon (shims/dockerd.js): started once per site, before any node, so that a
// node's read-only docker commands are answered without a Node.js start each (shims/docker-cli).
import * as fs from "node:fs";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { isAlive, procStat, registeredProcesses, type ProcRecord } from "./procs";

const WHAT = "dockerd ";

/** The site's docker daemon, as the site registered it (none once it is stopped and reaped). */
export function dockerdProcesses(dir: string): ProcRecord[] {
  return registeredProcesses(dir).filter((r) => r.what.startsWith(WHAT));
}

/** Starts the daemon and waits until it has written its port; fails early if it died. */
export async function startDockerd(dir: string, timeoutMs: number): Promise<ProcRecord> {
  const log = path.join(dir, "run", "dockerd.log");
  const portFile = path.join(dir, "run", "dockerd.port");
  fs.mkdirSync(path.dirname(log), { recursive: true });
  fs.rmSync(portFile, { force: true });
  const out = fs.openSync(log, "a");
  const child = spawn(process.execPath, [path.join(dir, "shims", "dockerd.js"), dir], { detached: true, stdio: ["ignore", out, out] });
  fs.closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`test site: could not start ${path.join(dir, "shims", "dockerd.js")}`);
  const rec = { pid, start: procStat(pid)?.start ?? null, what: `${WHAT}${dir}` };
  const deadline = Date.now() + timeoutMs;
  while (!fs.existsSync(portFile)) {
    if (!isAlive(pid, rec.start)) throw new Error(`test site: the docker daemon exited at startup:\n${fs.existsSync(log) ? fs.readFileSync(log, "utf8").slice(-2000) : ""}`);
    if (Date.now() > deadline) throw new Error(`test site: the docker daemon wrote no port within ${timeoutMs} ms (log: ${log})`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return rec;
}
