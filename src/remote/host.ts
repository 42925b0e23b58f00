/**
 * The only code that talks to hosts. A Host is one connection for one operation: every step of
 * the operation runs on it as its own `bash -s` channel, the script on stdin, so the login shell
 * never parses it and no secret is ever in an argv.
 */
import { CommandError } from "./errors";
import type { LockChannel } from "./lock";

export interface RunOptions {
  /** The step, for errors and progress: "preflight", "stop", ... */
  step: string;
  timeoutMs?: number;
  /** Called for each stdout line as it arrives (progress messages). */
  onLine?: (line: string) => void;
  /** Do not throw on a non-zero exit; the caller reads `code`. */
  allowFailure?: boolean;
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
  /** The `@sm121 {...}` records the script printed, in order. */
  records: Record<string, unknown>[];
}

export interface Host {
  readonly node: string;
  run(script: string, opts: RunOptions): Promise<RunResult>;
  /** Takes the node lock on its own channel of this connection; see ./lock. */
  lock(owner: string, waitS: number): LockChannel;
  close(): void;
}

export const RECORD_PREFIX = "@sm121 ";

export function parseRecords(stdout: string): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const line of stdout.split("\n")) {
    if (!line.startsWith(RECORD_PREFIX)) continue;
    try {
      const v: unknown = JSON.parse(line.slice(RECORD_PREFIX.length));
      if (v !== null && typeof v === "object" && !Array.isArray(v)) out.push(v as Record<string, unknown>);
    } catch {
      // A malformed record is reported by the caller as a missing one.
    }
  }
  return out;
}

/** Every step runs as strict bash: the first failing command ends it with its exit code. */
export function stepScript(body: string): string {
  return `set -euo pipefail\n${body}\n`;
}

/** Shared line splitting and result building for both transports. */
export class Collector {
  stdout = "";
  stderr = "";
  private partial = "";

  constructor(private readonly onLine?: (line: string) => void) {}

  out(chunk: Buffer | string): void {
    const s = chunk.toString();
    this.stdout += s;
    if (this.onLine === undefined) return;
    this.partial += s;
    const lines = this.partial.split("\n");
    this.partial = lines.pop() ?? "";
    for (const l of lines) this.onLine(l);
  }

  err(chunk: Buffer | string): void {
    this.stderr += chunk.toString();
  }

  finish(node: string, opts: RunOptions, code: number | null): RunResult {
    if (this.partial !== "" && this.onLine !== undefined) this.onLine(this.partial);
    const result = { code, stdout: this.stdout, stderr: this.stderr, records: parseRecords(this.stdout) };
    if (code !== 0 && opts.allowFailure !== true) throw new CommandError(node, opts.step, code, this.stderr);
    return result;
  }
}
