/**
 * Two kinds of failure, kept apart as pulumi-command does: the host could not be reached (a
 * TransportError) or a script ran and failed (a CommandError). Both name the node and the step.
 */

export class TransportError extends Error {
  readonly node: string;
  readonly step: string;

  constructor(node: string, step: string, detail: string, fix: string) {
    super(`node ${node}: ${step}: ${detail}; ${fix}`);
    this.name = "TransportError";
    this.node = node;
    this.step = step;
  }
}

/** How a script ended: its exit code, or the signal that ended it (ssh names it without "SIG"). */
export interface Exit {
  code: number | null;
  signal: string | null;
}

export interface CommandFailure {
  node: string;
  step: string;
  exit: Exit;
  /** Set when sm121 stopped the script because its time ran out. */
  timedOutS?: number;
  /** Set when sm121 stopped the script for the operator's Ctrl-C (remote/cancel). */
  interrupted?: boolean;
  /** The last lines of each stream. */
  stdout: string;
  stderr: string;
}

/** A step that ran and failed, with the evidence: how it ended and the tails of both streams. */
export class CommandError extends Error {
  readonly node: string;
  readonly step: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOutS: number | undefined;
  readonly interrupted: boolean;
  readonly stdoutTail: string;
  readonly stderrTail: string;

  constructor(f: CommandFailure) {
    const signal = f.exit.signal === null ? null : f.exit.signal.startsWith("SIG") ? f.exit.signal : `SIG${f.exit.signal}`;
    const timedOut = `timed out after ${f.timedOutS ?? 0} s`;
    const ending = f.interrupted === true
      ? "was interrupted (Ctrl-C) and stopped; the node keeps what this step had done"
      : f.timedOutS !== undefined
        ? f.exit.code === null && signal === null
          ? `${timedOut}; its channel was closed without an exit status (the node may still be running it)`
          : `${timedOut} and was stopped (${f.exit.code !== null ? `exit code ${f.exit.code}` : `signal ${signal ?? ""}`})`
        : f.exit.code !== null
          ? `exited with code ${f.exit.code}`
          : `was killed by signal ${signal ?? "(unknown)"}`;
    super(`node ${f.node}: ${f.step} ${ending}${section("stderr", f.stderr)}${section("stdout", f.stdout)}`);
    this.name = "CommandError";
    this.node = f.node;
    this.step = f.step;
    this.code = f.exit.code;
    this.signal = signal;
    this.timedOutS = f.timedOutS;
    this.interrupted = f.interrupted === true;
    this.stdoutTail = f.stdout;
    this.stderrTail = f.stderr;
  }
}

function section(name: string, tail: string): string {
  return tail === "" ? "" : `\n--- ${name} (last lines) ---\n${tail}`;
}
