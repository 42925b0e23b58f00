/**
 * Node locks: two stacks, or a `pulumi up` and an sm121 command that changes a node, never work on
 * one node at once. The lock is a flock on ~/.sm121/node.lock held by one channel of the
 * operation's connection for as long as the operation runs; a lost connection ends the channel
 * and so releases the lock.
 */
import { nodePath, quote } from "../text/shell";
import { TransportError } from "./errors";

export class NodeBusyError extends Error {
  constructor(readonly node: string, holder: string, waitS: number) {
    super(`node ${node} is busy: held by ${holder === "" ? "another operation" : holder}; waited ${waitS} s. Run again when it is done`);
    this.name = "NodeBusyError";
  }
}

export const LOCK_FILE = "~/.sm121/node.lock";

/** The lock channel's script: wait for the flock, record the holder, then hold until stdin ends. */
export function lockScript(owner: string, waitS: number): string {
  const f = nodePath(LOCK_FILE);
  return [
    "set -u",
    `mkdir -p "$(dirname ${f})"`,
    `exec 9>>${f}`,
    `if ! flock -w ${waitS} 9; then printf '@sm121-busy %s\\n' "$(cat ${f}.holder 2>/dev/null)"; exit 75; fi`,
    `printf '%s since %s\\n' ${quote(owner)} "$(date -u +%Y-%m-%dT%H:%M:%SZ)" > ${f}.holder`,
    "echo @sm121-locked",
    // Hold the lock until the operation closes this channel's stdin (or the connection drops).
    "cat > /dev/null",
    "",
  ].join("\n");
}

export interface LockChannel {
  /** Resolves when the lock is held; rejects with NodeBusyError or a TransportError. */
  acquired: Promise<void>;
  release(): void;
}

/** A byte channel to a `bash -s` on the node: the lock channel's transport. */
export interface LockIo {
  write(s: string): void;
  end(): void;
  onData(cb: (s: string) => void): void;
  onClose(cb: (code: number | null) => void): void;
}

/** Sends the lock script without ending stdin; the channel's stdout says locked or busy. */
export function driveLock(node: string, owner: string, waitS: number, open: Promise<LockIo>): LockChannel {
  let io: LockIo | undefined;
  const acquired = open.then(
    (ch) =>
      new Promise<void>((resolve, reject) => {
        io = ch;
        let out = "";
        ch.onData((s) => {
          out += s;
          if (out.includes("@sm121-locked")) resolve();
        });
        ch.onClose((code) => {
          const busy = /@sm121-busy ?(.*)/.exec(out);
          if (busy !== null) reject(new NodeBusyError(node, (busy[1] ?? "").trim(), waitS));
          else if (!out.includes("@sm121-locked")) reject(new TransportError(node, "lock", `the lock channel ended with code ${String(code)} before the lock was taken`, "check that flock (util-linux) is installed on the node"));
        });
        ch.write(lockScript(owner, waitS));
      }),
  );
  return { acquired, release: () => io?.end() };
}
