/**
 * Node locks: two runs (two stacks, two checkouts of one stack, a run and a leftover of a killed
 * one), or a `pulumi up` and an sm121 command that changes a node, never work on one node at once.
 * The lock is a flock on ~/.sm121/node.lock held by one channel of the operation's connection for
 * as long as the operation runs; a lost connection ends the channel and so releases the lock. The
 * same channel then runs the operation's steps (./held): on an ssh node a whole serve is one
 * channel. An operation that finds the node held says whom it waits for at once, waits up to
 * lockWaitS, and then fails naming the holder: the stack, the user and machine, the pid and the
 * time, as Pulumi's own stack lock names its holder.
 */
import { hostname, userInfo } from "node:os";
import { msg, SaidError, say, type Msg } from "../text/messages";
import { nodePath, quote } from "../text/shell";
import { TransportError } from "./errors";
import { cancelled } from "./cancel";
import { endMarker, HeldChannel, stepLoop, type LockIo } from "./held";
import { interruptedBefore, type LockChannel } from "./host";

export type { LockIo } from "./held";

export class NodeBusyError extends SaidError {
  constructor(
    readonly node: string,
    /** Who holds the node, as its holder file names them (`runName`); "" when it names nobody. */
    readonly holder: string,
    waitS: number,
  ) {
    super(msg("remote.busy", { node, holder: holderOf(holder), seconds: waitS }));
    this.name = "NodeBusyError";
  }
}

function holderOf(holder: string): string | Msg {
  return holder === "" ? msg("remote.anotherOperation") : holder;
}

export const LOCK_FILE = "~/.sm121/node.lock";

/** Who a run is, in a node's holder file: `stack sim (ci@runner-b, pid 4242)`. */
export function runName(stack: string | undefined, pid: number = process.pid): string {
  let user = process.env["USER"] ?? "?";
  try {
    user = userInfo().username;
  } catch {
    // No passwd entry (a container's arbitrary uid): the environment's USER stands.
  }
  return `${stack === undefined ? "an sm121 run" : `stack ${stack}`} (${user}@${hostname()}, pid ${pid})`;
}

/** What an operation says while it waits for a node another run holds. */
export function waitingMessage(node: string, holder: string, waitS: number): string {
  return say(msg("remote.waiting", { node, seconds: waitS, holder: holderOf(holder) }));
}

/**
 * The lock channel's script: take the flock, or say who holds it and wait for it; record the
 * holder, then run the operation's scripts as they arrive (stepLoop) until stdin ends, which
 * releases the lock.
 */
export function lockScript(owner: string, waitS: number, end: string): string {
  const f = nodePath(LOCK_FILE);
  return [
    "set -u",
    `mkdir -p "$(dirname ${f})"`,
    `exec 9>>${f}`,
    `if ! flock -n 9; then`,
    `  printf '@sm121-waiting %s\\n' "$(cat ${f}.holder 2>/dev/null)"`,
    `  if ! flock -w ${waitS} 9; then printf '@sm121-busy %s\\n' "$(cat ${f}.holder 2>/dev/null)"; exit 75; fi`,
    "fi",
    `printf '%s since %s\\n' ${quote(owner)} "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > ${f}.holder`,
    "echo @sm121-locked",
    stepLoop(end),
    "",
  ].join("\n");
}

const LOCKED = "@sm121-locked\n";
const WAITING = /@sm121-waiting ?(.*)\n/;

/**
 * Sends the lock script without ending stdin; the channel's stdout says waiting (onWait gets the
 * holder), then locked or busy, then carries the steps.
 */
export function driveLock(
  node: string,
  owner: string,
  waitS: number,
  open: Promise<LockIo>,
  onWait?: (holder: string) => void,
): LockChannel {
  let io: LockIo | undefined;
  const end = endMarker();
  let held: HeldChannel | undefined;
  const acquired = open.then(
    (ch) =>
      new Promise<void>((resolve, reject) => {
        io = ch;
        const steps = new HeldChannel(node, ch, end);
        let out = "";
        let waiting = false;
        ch.onOut((b) => {
          if (held !== undefined) return held.stdout(b);
          out += b.toString("latin1");
          const w = waiting ? null : WAITING.exec(out);
          if (w !== null) {
            waiting = true;
            onWait?.(
              Buffer.from(w[1] ?? "", "latin1")
                .toString("utf8")
                .trim(),
            );
          }
          const i = out.indexOf(LOCKED);
          if (i === -1) return;
          held = steps;
          resolve();
          const rest = Buffer.from(out.slice(i + LOCKED.length), "latin1");
          if (rest.length > 0) held.stdout(rest);
        });
        ch.onErr((b) => held?.stderr(b));
        // Ctrl-C ends a wait for the lock too (remote/cancel).
        const interrupt = () => {
          if (held === undefined) ch.kill();
        };
        cancelled.addEventListener("abort", interrupt, { once: true });
        if (cancelled.aborted) ch.kill();
        ch.onClose((code) => {
          cancelled.removeEventListener("abort", interrupt);
          if (held !== undefined) return held.close();
          const stopped = interruptedBefore(node, "lock");
          if (stopped !== undefined) return reject(stopped);
          const busy = /@sm121-busy ?(.*)/.exec(Buffer.from(out, "latin1").toString("utf8"));
          if (busy !== null) reject(new NodeBusyError(node, (busy[1] ?? "").trim(), waitS));
          else
            reject(
              new TransportError(
                node,
                "lock",
                msg("remote.lockEnded", { code: String(code) }),
                msg("remote.fixFlock", { node }),
              ),
            );
        });
        ch.write(lockScript(owner, waitS, end));
      }),
  );
  return {
    acquired,
    run: (script, opts) =>
      held === undefined ? Promise.reject(new SaidError(msg("remote.notLocked", { node }))) : held.run(script, opts),
    release: () => io?.end(),
  };
}
