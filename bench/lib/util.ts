/** Small helpers of the benchmark harness: medians, rounding, logging, machine load. */
import { readFileSync } from "node:fs";
import { loadavg } from "node:os";
import type { PulumiRun } from "../../test/helpers/pulumi";

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** Seconds with millisecond precision. */
export const sec = (ms: number): number => Math.round(ms) / 1000;

export const round = (x: number, digits = 2): number => {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
};

export function say(msg: string): void {
  process.stderr.write(`bench: ${msg}\n`);
}

/** The median of the per-round ratios a[i] / b[i], to two digits: samples of one round share its load. */
export const medianRatio = (a: readonly number[], b: readonly number[]): number =>
  round(median(a.map((x, i) => x / (b[i] ?? Number.NaN))), 2);

/** The 1-minute load average: the machine is shared, so every section records it. */
export const load1 = (): number => round(loadavg()[0] ?? 0, 2);

/** Fails loudly with the Pulumi output: a benchmark of a failed run measures nothing. */
export function ok(what: string, r: PulumiRun): PulumiRun {
  if (r.code !== 0) throw new Error(`${what} failed (exit ${String(r.code)}):\n${r.all.slice(-4000)}`);
  return r;
}

/** Runs `f` n times and returns every wall time (ms) and the last result. */
export async function repeat<T>(
  n: number,
  f: (i: number) => Promise<{ ms: number; value: T }>,
): Promise<{ ms: number[]; last: T }> {
  const ms: number[] = [];
  let last: T | undefined;
  for (let i = 0; i < n; i++) {
    const r = await f(i);
    ms.push(r.ms);
    last = r.value;
  }
  if (last === undefined) throw new Error("repeat: n must be at least 1");
  return { ms, last };
}

/** A Pulumi run as a timed sample. */
export async function timed(what: string, run: () => Promise<PulumiRun>): Promise<{ ms: number; value: PulumiRun }> {
  const r = ok(what, await run());
  return { ms: r.ms, value: r };
}

/** The `Resources:` summary of a Pulumi run, on one line. */
export function summary(r: PulumiRun): string {
  const m = /Resources:\n([\s\S]*?)\n\n/.exec(r.stdout);
  return (m?.[1] ?? "")
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .join(", ");
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * CPU time in ms of this process's children that have ended and been waited for (proc(5):
 * /proc/self/stat cutime + cstime, in clock ticks of 1/100 s): a `pulumi` run and what it waited
 * for (its language host, the program, the provider hosts). The simulated nodes' daemons and what
 * they start are not in it: they are not this process's children, or have not ended.
 */
export function reapedCpuMs(): number {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // After the command's ")", the fields start at the third (state): cutime is the 16th.
  return (Number(fields[13]) + Number(fields[14])) * 10;
}
