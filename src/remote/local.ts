/** host: local — the machine that runs Pulumi (or the CLI) is the node. */
import { spawn } from "node:child_process";
import { Collector, stepScript, type Host, type RunOptions, type RunResult } from "./host";
import { driveLock, type LockChannel } from "./lock";

export class LocalHost implements Host {
  constructor(readonly node: string) {}

  run(script: string, opts: RunOptions): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      const child = spawn("bash", ["-s"], { stdio: ["pipe", "pipe", "pipe"] });
      const c = new Collector(opts.onLine);
      const timer = opts.timeoutMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs);
      child.stdout.on("data", (d: Buffer) => c.out(d));
      child.stderr.on("data", (d: Buffer) => c.err(d));
      child.on("error", reject);
      child.on("close", (code) => {
        if (timer !== undefined) clearTimeout(timer);
        try {
          resolve(c.finish(this.node, opts, code));
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      child.stdin.end(stepScript(script));
    });
  }

  lock(owner: string, waitS: number): LockChannel {
    const child = spawn("bash", ["-s"], { stdio: ["pipe", "pipe", "pipe"] });
    return driveLock(this.node, owner, waitS, Promise.resolve({
      write: (t: string) => void child.stdin.write(t),
      end: () => child.stdin.end(),
      onData: (cb: (s: string) => void) => void child.stdout.on("data", (d: Buffer) => cb(d.toString())),
      onClose: (cb: (code: number | null) => void) => void child.on("close", cb),
    }));
  }

  close(): void {
    // Nothing held open.
  }
}
