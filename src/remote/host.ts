/**
 * The only code that talks to hosts. A Host is one connection for one operation: every step of
 * the operation runs on it as a `bash -s`, the script on stdin, so the login shell never parses it
 * and no secret is ever in an argv. A step of an operation that holds the node lock runs on the
 * lock's own channel (./held); any other step gets a channel of its own.
 */
import { cancelled } from "./cancel";
import { msg, say } from "../text/messages";
import { CommandError, TransportError, type Exit } from "./errors";
import { OutputStream } from "./output";
import { ProtocolError, RECORD_PREFIX, recordOfLine, type NodeRecord } from "../protocol";

export interface RunOptions {
  /** The step, for errors and progress: "preflight", "stop", ... */
  step: string;
  /** The script is stopped after this long, and the step fails with "timed out after N s". */
  timeoutMs?: number;
  /**
   * Streams stdout line by line as it arrives (progress, `sm121 logs --follow`). The output is then
   * not kept: the result's stdout is only its last lines, so a stream without end stays small.
   */
  onLine?: (line: string) => void;
  /** The same for stderr. */
  onErrLine?: (line: string) => void;
  /** Do not throw on a non-zero exit (or a timeout); the caller reads `code`. */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The `@sm121 {...}` records the script printed, in order (../protocol). */
  records: NodeRecord[];
}

/** The node lock, held on a channel of its own (./lock), and the steps that run under it (./held). */
export interface LockChannel {
  /** Resolves when the lock is held; rejects with NodeBusyError or a TransportError. */
  acquired: Promise<void>;
  /** Runs a step on the lock channel, after the lock is held (see ./held). */
  run(script: string, opts: RunOptions): Promise<RunResult>;
  release(): void;
}

/**
 * Steps on one channel of a connection, one after another, with no lock (./held): what an
 * operation that only reads (the plan-time look) runs on a node costs the node one channel.
 */
export interface StepChannel {
  run(script: string, opts: RunOptions): Promise<RunResult>;
  /** Ends the channel: the node's loop reads the end of its input and exits. */
  close(): void;
}

export interface Host {
  readonly node: string;
  /**
   * The host key this connection verified, as `<type> <base64>` (ssh only): what a node-to-node
   * copy writes into the sending node's known_hosts for this node.
   */
  readonly hostKey?: string;
  /** What logged in (ssh only): "sm121:sshPrivateKey", "ssh-agent" or a key file (./login). */
  readonly login?: string;
  run(script: string, opts: RunOptions): Promise<RunResult>;
  /** Takes the node lock on its own channel of this connection; see ./lock. */
  lock(owner: string, waitS: number, onWait?: (holder: string) => void): LockChannel;
  /** Opens one channel for steps that need no lock (see StepChannel). */
  steps(): StepChannel;
  close(): void;
}

/** A step asked for after the operator's Ctrl-C: it fails before anything is sent to the node. */
export function interruptedBefore(node: string, step: string): CommandError | undefined {
  if (!cancelled.aborted) return undefined;
  const exit = { code: null, signal: null };
  return new CommandError({ node, step, exit, interrupted: true, stdout: "", stderr: "" });
}

/** Every step runs as strict bash: the first failing command ends it with its exit code. */
export function stepScript(body: string): string {
  return `set -euo pipefail\n${body}\n`;
}

/**
 * One run's output, shared by both transports: both streams decoded as UTF-8 across chunk
 * boundaries, records collected line by line, and the result or the CommandError built at the end.
 */
export class Collector {
  private readonly records: NodeRecord[] = [];
  /** The first record that did not parse: the step fails with it once the script has ended. */
  private malformed: ProtocolError | undefined;
  private readonly stdout: OutputStream;
  private readonly stderr: OutputStream;
  private timedOut = false;
  private interrupted = false;
  private finished = false;

  constructor(private readonly opts: RunOptions) {
    const onLine = opts.onLine;
    this.stdout = new OutputStream((line) => {
      try {
        const r = recordOfLine(line);
        if (r !== undefined) this.records.push(r);
      } catch (e) {
        if (!(e instanceof ProtocolError)) throw e;
        this.malformed ??= e;
      }
      onLine?.(line);
    }, onLine === undefined);
    this.stderr = new OutputStream(opts.onErrLine, opts.onErrLine === undefined);
  }

  out(chunk: Buffer): void {
    if (!this.finished) this.stdout.write(chunk);
  }

  err(chunk: Buffer): void {
    if (!this.finished) this.stderr.write(chunk);
  }

  /**
   * Starts the step's clock; `stop` ends the script when it runs out, or at the operator's Ctrl-C
   * (remote/cancel). Returns the clock's cancel.
   */
  clock(stop: () => void): () => void {
    const interrupt = () => {
      this.interrupted = true;
      stop();
    };
    cancelled.addEventListener("abort", interrupt, { once: true });
    const ms = this.opts.timeoutMs;
    const timer =
      ms === undefined
        ? undefined
        : setTimeout(() => {
            this.timedOut = true;
            stop();
          }, ms);
    return () => {
      cancelled.removeEventListener("abort", interrupt);
      if (timer !== undefined) clearTimeout(timer);
    };
  }

  /** Builds the result, or throws the failure. Output that arrives after this is dropped. */
  finish(node: string, exit: Exit): RunResult {
    this.finished = true;
    this.stdout.end();
    this.stderr.end();
    const result = { code: exit.code, stdout: this.stdout.text(), stderr: this.stderr.text(), records: this.records };
    // Ctrl-C fails every step it stopped, whatever its caller would accept.
    if (this.interrupted) {
      const stdout = this.stdout.tailLines((l) => !l.startsWith(RECORD_PREFIX));
      const stderr = this.stderr.tailLines(() => true);
      throw new CommandError({ node, step: this.opts.step, exit, interrupted: true, stdout, stderr });
    }
    const malformed = this.malformed === undefined ? undefined : this.protocolFailure(node, this.malformed);
    if (this.opts.allowFailure === true) {
      if (malformed !== undefined) throw malformed;
      return result;
    }
    // No exit status and no signal: the channel died with its connection, not the script.
    if (!this.timedOut && !this.interrupted && exit.code === null && exit.signal === null) {
      const fix = msg("remote.fixLostInStep", { node });
      throw new TransportError(node, this.opts.step, msg("remote.lostInStep"), fix, "lost");
    }
    if (this.timedOut || exit.code !== 0) {
      throw new CommandError({
        node,
        step: this.opts.step,
        exit,
        ...(this.timedOut && this.opts.timeoutMs !== undefined && { timedOutS: this.opts.timeoutMs / 1000 }),
        // Records are for the program, not the reader (and one may carry a key).
        stdout: this.stdout.tailLines((l) => !l.startsWith(RECORD_PREFIX)),
        stderr: this.stderr.tailLines(() => true),
      });
    }
    if (malformed !== undefined) throw malformed;
    return result;
  }

  /** A record the program cannot read: the node ran a script of another sm121, or one was changed. */
  private protocolFailure(node: string, e: ProtocolError): ProtocolError {
    const problem = say(msg("remote.protocolFix", { problem: e.problem, node, step: this.opts.step }));
    return new ProtocolError(e.record, problem);
  }
}
