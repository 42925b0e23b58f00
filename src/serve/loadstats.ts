/**
 * Latency samples and their summary (count, mean, min, p50, p90, p99, max), in milliseconds: what
 * `sm121 bench` reports and the gate of an up (./gate) compares.
 */

/** A summary of samples, in milliseconds (cli/schemas' latencySchema checks the same shape). */
export interface Latency {
  count: number;
  mean: number;
  min: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

/** A growable Float64Array: millions of inter-token gaps without millions of boxed numbers. */
export class Samples {
  private data = new Float64Array(1024);
  length = 0;

  push(v: number): void {
    if (this.length === this.data.length) {
      const next = new Float64Array(this.data.length * 2);
      next.set(this.data);
      this.data = next;
    }
    this.data[this.length++] = v;
  }

  sorted(): Float64Array {
    return this.data.slice(0, this.length).sort();
  }
}

/** The nearest-rank percentile of sorted values (p in 0..100); 0 for no values. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1] ?? 0;
}

const round = (v: number) => Math.round(v * 1000) / 1000;

export function summarize(s: Samples): Latency {
  const v = s.sorted();
  let sum = 0;
  for (const x of v) sum += x;
  return {
    count: v.length,
    mean: round(v.length === 0 ? 0 : sum / v.length),
    min: round(v[0] ?? 0),
    p50: round(percentile(v, 50)),
    p90: round(percentile(v, 90)),
    p99: round(percentile(v, 99)),
    max: round(v[v.length - 1] ?? 0),
  };
}
