/** host: local — the machine that runs Pulumi (or the CLI) is the node. */
import { spawn, type ChildProcess } from "node:child_process";
import {
  Collector,
  interruptedBefore,
  stepScript,
  type Host,
  type LockChannel,
  type RunOptions,
  type RunResult,
  type StepChannel,
} from "./host";
import { driveLock } from "./lock";

export class LocalHost implements Host {
  /** Scripts still running; close() ends them as closing an ssh connection ends its channels. */
  private readonly running = new Set<ChildProcess>();

  constructor(readonly node: string) {}

  run(script: string, opts: RunOptions): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      const stopped = interruptedBefore(this.node, opts.step);
      if (stopped !== undefined) {
        reject(stopped);
        return;
      }
      // Its own process group, so that stopping the step stops what the script started too:
      // a child left alive would hold the output pipes open, and the step would never end.
      const child = spawn("bash", ["-s"], { stdio: ["pipe", "pipe", "pipe"], detached: true });
      this.running.add(child);
      const c = new Collector(opts);
      const cancel = c.clock(() => killGroup(child));
      child.stdout.on("data", (d: Buffer) => c.out(d));
      child.stderr.on("data", (d: Buffer) => c.err(d));
      child.on("error", (e) => {
        this.running.delete(child);
        cancel();
        reject(e);
      });
      child.on("close", (code, signal) => {
        this.running.delete(child);
        cancel();
        try {
          resolve(c.finish(this.node, { code, signal }));
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      });
      child.stdin.end(stepScript(script));
    });
  }

  lock(owner: string, waitS: number, onWait?: (holder: string) => void): LockChannel {
    const child = spawn("bash", ["-s"], { stdio: ["pipe", "pipe", "pipe"] });
    const held = driveLock(
      this.node,
      owner,
      waitS,
      Promise.resolve({
        write: (t: string) => void child.stdin.write(t),
        end: () => child.stdin.end(),
        kill: () => void child.kill("SIGKILL"),
        onOut: (cb: (b: Buffer) => void) => void child.stdout.on("data", cb),
        onErr: (cb: (b: Buffer) => void) => void child.stderr.on("data", cb),
        onClose: (cb: (code: number | null) => void) => void child.on("close", cb),
      }),
      onWait,
    );
    // Here a step is a process of its own, with its own group (a timeout stops that step alone);
    // there is no channel to save.
    return { ...held, run: (script, opts) => this.run(script, opts) };
  }

  /** Here every step is a process of its own: there is no channel to save. */
  steps(): StepChannel {
    return { run: (script, opts) => this.run(script, opts), close: () => undefined };
  }

  close(): void {
    for (const child of this.running) killGroup(child);
  }
}

function killGroup(child: ChildProcess): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, "SIGKILL");
  } catch {
    // The group is already gone.
  }
}
