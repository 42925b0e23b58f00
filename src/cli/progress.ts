/**
 * A one-line progress bar, redrawn at most ten times a second, only on a terminal: piped output
 * and --json stay clean.
 */
import { t } from "../text/messages";

export interface ProgressStream {
  isTTY?: boolean;
  columns?: number;
  write(s: string): boolean;
}

export class Progress {
  private last = 0;
  private drawn = false;
  private readonly started: number;

  /** `clock`: milliseconds now (the redraw limit and the rate are measured with it). */
  constructor(
    private readonly total: number,
    private readonly stream: ProgressStream = process.stdout,
    private readonly enabled: boolean = process.stdout.isTTY === true,
    private readonly clock: () => number = Date.now,
  ) {
    this.started = clock();
  }

  update(done: number, errors: number, force = false): void {
    if (!this.enabled) return;
    const now = this.clock();
    if (!force && now - this.last < 100) return;
    this.last = now;
    const width = Math.max(10, Math.min(40, (this.stream.columns ?? 80) - 50));
    const frac = this.total === 0 ? 1 : Math.min(1, done / this.total);
    const fill = Math.round(frac * width);
    const rate = done / Math.max(0.001, (now - this.started) / 1000);
    const bar = `[${"#".repeat(fill)}${"-".repeat(width - fill)}]`;
    const counts = t("bench.progress", { done: done + errors, total: this.total, rate: rate.toFixed(1), errors });
    this.stream.write(`\r${bar} ${counts}\x1b[K`);
    this.drawn = true;
  }

  /** Clears the line, so the report starts at column 0. */
  finish(): void {
    if (this.enabled && this.drawn) this.stream.write("\r\x1b[K");
  }
}
