/**
 * The operation's steps on the lock channel: the `bash -s` that holds a node's lock also runs the
 * operation's scripts, one after another, so that a whole serve costs the node one channel. Each
 * script goes down as a frame (its length in bytes on a line, then the script, whose last line
 * names the end marker: a cut-off frame is refused unrun); the node answers with the script's own
 * output and, on both streams, the end marker and the exit code. Each stream keeps its own order,
 * so a step has ended when both markers have arrived.
 */
import { randomBytes } from "node:crypto";
import { msg, t } from "../text/messages";
import { shellValue, shellWords } from "../text/shell";
import { TransportError, type Exit } from "./errors";
import { Collector, interruptedBefore, stepScript, type RunOptions, type RunResult, type StepChannel } from "./host";

/** A byte channel to the lock's `bash -s` on the node. */
export interface LockIo {
  write(s: string): void;
  end(): void;
  /** Ends the channel at once: a step ran out of time. */
  kill(): void;
  onOut(cb: (b: Buffer) => void): void;
  onErr(cb: (b: Buffer) => void): void;
  onClose(cb: (code: number | null) => void): void;
}

/** The loop the lock script runs once the lock is held: read a frame, check it whole, run it, answer. */
export function stepLoop(end: string): string {
  const notFrame = shellWords(`sm121: ${t("remote.notFrame", { line: shellValue("$n") })}`);
  const cutOff = shellWords(`sm121: ${t("remote.cutOff")}`);
  return [
    "while IFS= read -r n; do",
    `  case "$n" in ''|*[!0-9]*) echo ${notFrame} >&2; exit 65;; esac`,
    // The dot keeps the script's trailing newlines through the command substitution.
    '  s=$(head -c "$n"; echo .); s=${s%.}',
    `  case "$s" in *$'\\n'"# ${end}"$'\\n') ;; ` + `*) echo ${cutOff} >&2; exit 65;; esac`,
    // fd 9 holds the lock: what a step starts (an engine) must not hold it after the operation.
    // The step runs in a process group of its own beside a watch on the channel. Nothing arrives
    // on the channel while a step runs (the next frame waits for this one's end), so the watch's
    // read returns only when the channel ends (the operation's connection is gone, however it
    // went): then it stops the step's group (TERM, KILL after 5 s), waits until none of it is
    // left, and ends this script, which releases the lock. A step that ends by itself ends the
    // watch with USR1.
    "  printf '%s' \"$s\" | setsid -w bash -s 9>&- & step=$!; unset s",
    "  { trap 'exit 0' USR1; read -r _; trap '' USR1; kill -TERM -- \"-$step\" 2>/dev/null; t=0",
    '    while kill -0 -- "-$step" 2>/dev/null; do',
    '      t=$((t + 1)); [ $t -eq 100 ] && kill -KILL -- "-$step"; sleep 0.05',
    "    done",
    "    kill -TERM $$; } <&0 9>&- & watch=$!",
    '  wait "$step"; rc=$?',
    '  kill -USR1 "$watch" 2>/dev/null; wait "$watch" 2>/dev/null',
    `  printf '%s %d\\n' '${end}' "$rc"; printf '%s %d\\n' '${end}' "$rc" >&2`,
    "done",
  ].join("\n");
}

/**
 * Splits one stream of the channel at the end markers: the bytes before a marker are the
 * running step's, the marker's number is its exit code. Only a possible start of a marker is
 * held back, so progress lines pass on as they arrive.
 */
class MarkerSplitter {
  private carry: Buffer = Buffer.alloc(0);
  private readonly marker: Buffer;

  constructor(
    end: string,
    private readonly onData: (b: Buffer) => void,
    private readonly onEnd: (code: number) => void,
  ) {
    this.marker = Buffer.from(`${end} `);
  }

  push(chunk: Buffer): void {
    let buf = this.carry.length === 0 ? chunk : Buffer.concat([this.carry, chunk]);
    this.carry = Buffer.alloc(0);
    for (;;) {
      const i = buf.indexOf(this.marker);
      if (i === -1) break;
      const nl = buf.indexOf(0x0a, i);
      if (nl === -1) {
        this.pass(buf.subarray(0, i));
        this.carry = buf.subarray(i);
        return;
      }
      this.pass(buf.subarray(0, i));
      this.onEnd(Number(buf.subarray(i + this.marker.length, nl).toString("latin1")));
      buf = buf.subarray(nl + 1);
    }
    let keep = Math.min(buf.length, this.marker.length - 1);
    while (keep > 0 && !buf.subarray(buf.length - keep).equals(this.marker.subarray(0, keep))) keep--;
    this.pass(buf.subarray(0, buf.length - keep));
    this.carry = Buffer.from(buf.subarray(buf.length - keep));
  }

  private pass(b: Buffer): void {
    if (b.length > 0) this.onData(b);
  }
}

interface Running {
  c: Collector;
  out: boolean;
  err: boolean;
  finish: (exit: Exit) => void;
}

/** Runs scripts on a held lock channel, one at a time, in the order they were asked for. */
export class HeldChannel {
  private current: Running | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private readonly out: MarkerSplitter;
  private readonly err: MarkerSplitter;

  constructor(
    private readonly node: string,
    private readonly io: LockIo,
    private readonly end: string,
  ) {
    this.out = new MarkerSplitter(
      end,
      (b) => this.current?.c.out(b),
      (code) => this.ended("out", code),
    );
    this.err = new MarkerSplitter(
      end,
      (b) => this.current?.c.err(b),
      (code) => this.ended("err", code),
    );
  }

  /** What the node printed on the channel's stdout and stderr, once the lock is held. */
  stdout(b: Buffer): void {
    this.out.push(b);
  }

  stderr(b: Buffer): void {
    this.err.push(b);
  }

  run(script: string, opts: RunOptions): Promise<RunResult> {
    const p = this.queue.then(() => this.runNow(script, opts));
    this.queue = p.catch(() => undefined);
    return p;
  }

  /** The channel ended: a step still running lost its connection (or its time ran out). */
  close(): void {
    this.closed = true;
    this.current?.finish({ code: null, signal: null });
  }

  private runNow(script: string, opts: RunOptions): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      const stopped = interruptedBefore(this.node, opts.step);
      if (stopped !== undefined) {
        reject(stopped);
        return;
      }
      if (this.closed) {
        const fix = msg("remote.fixChannelEnded", { node: this.node });
        reject(new TransportError(this.node, opts.step, msg("remote.channelEnded"), fix, "lost"));
        return;
      }
      const c = new Collector(opts);
      let done = false;
      const finish = (exit: Exit) => {
        if (done) return;
        done = true;
        cancel();
        this.current = undefined;
        try {
          resolve(c.finish(this.node, exit));
        } catch (e) {
          reject(e instanceof Error ? e : new Error(String(e)));
        }
      };
      // Out of time: the channel is closed as run's timeout closes one, and no later step runs on
      // it. The lock goes when the node's script does: at once where sshd delivers the signal,
      // at the script's own end where a forced-command login refuses it.
      const cancel = c.clock(() => {
        this.closed = true;
        this.io.kill();
        finish({ code: null, signal: null });
      });
      this.current = { c, out: false, err: false, finish };
      const frame = `${stepScript(script)}# ${this.end}\n`;
      this.io.write(`${Buffer.byteLength(frame)}\n${frame}`);
    });
  }

  private ended(stream: "out" | "err", code: number): void {
    const r = this.current;
    if (r === undefined) return;
    r[stream] = true;
    if (r.out && r.err) r.finish({ code, signal: null });
  }
}

/** The end marker of every step on one channel: no script's own output can guess it. */
export function endMarker(): string {
  return `@sm121-end-${randomBytes(8).toString("hex")}`;
}

/**
 * Steps with no lock over one channel: the node runs stepLoop at once, and every script of the
 * operation goes down the same channel as a frame, one after another (the lock channel's way,
 * without the flock). A channel that cannot be opened fails every step with its error.
 */
export function driveSteps(node: string, open: Promise<LockIo>): StepChannel {
  const end = endMarker();
  const ready = open.then((io) => {
    const held = new HeldChannel(node, io, end);
    io.onOut((b) => held.stdout(b));
    io.onErr((b) => held.stderr(b));
    io.onClose(() => held.close());
    io.write(`${stepLoop(end)}\n`);
    return { io, held };
  });
  // A channel that failed to open fails the steps that ask for it, not the process.
  ready.catch(() => undefined);
  return {
    run: (script, opts) => ready.then(({ held }) => held.run(script, opts)),
    close: () => {
      ready.then(
        ({ io }) => io.end(),
        () => undefined,
      );
    },
  };
}
