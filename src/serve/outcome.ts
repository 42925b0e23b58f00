/** What a serve, stop or refresh found, as stored in the resource outputs. */
import { recordsOf, type NodeRecord } from "../protocol";

export type NodeStatus = "serving" | "standby" | "failed" | "stopped" | "drifted";

export interface NodeOutcome {
  node: string;
  rank: number;
  status: NodeStatus;
  /** The OpenAI endpoint this node answers on, when it does. */
  endpoint?: string;
  startedAt?: string;
  /** The bundle identity the node runs (or "none"/"drifted:<...>" after a refresh). */
  identity: string;
  kvCacheLine?: string;
  backups: string[];
  restarted: boolean;
  /** From the start of readiness to the first token of a one-token chat completion (seconds), and that completion's own time (ms). */
  readyS?: number;
  ttftMs?: number;
  /** Seconds each step of the last up took on this node, in the order they ran (a list: the state keeps its order). */
  timings?: StepTiming[];
}

export interface StepTiming {
  step: string;
  s: number;
}

export interface DeploymentOutcome {
  status: "serving" | "failed" | "stopped" | "drifted";
  nodes: NodeOutcome[];
  warnings: string[];
  servedModel?: string;
  maxModelLen?: number;
  /** The step that failed and why, when status is failed. */
  failure?: string;
  rolledBack?: boolean;
  /** The restarts that the engine's health caused (a dead or hung engine), within sm121:liveness windowS. */
  restarts?: Array<{ at: string; causes: string[] }>;
  /** Restarted maxRestarts times within windowS: failed, and left alone until SM121_RESTART=1. */
  held?: boolean;
}

/** The steps of a serve after the stop began, as its failure names them. */
export type ServeStep = "stop" | "write" | "memory gate, write and start" | "readiness";

/** A failure after the stop step began: the outcome says what happened on each node, `step` where it failed. */
export class ServeFailure extends Error {
  readonly outcome: DeploymentOutcome;
  readonly step: ServeStep;

  constructor(message: string, outcome: DeploymentOutcome, step: ServeStep) {
    super(message);
    this.name = "ServeFailure";
    this.outcome = outcome;
    this.step = step;
  }
}

/** A failed preflight: nothing was changed on any node. */
export class PreflightFailure extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PreflightFailure";
  }
}

/** `stop 0.4 s, memory-gate 0.0 s, ..., total 26.1 s`: a node's step timings in one line. */
export function timingLine(t: readonly StepTiming[]): string {
  const total = t.reduce((a, b) => a + b.s, 0);
  return [...t.map((x) => `${x.step} ${x.s.toFixed(1)} s`), `total ${total.toFixed(1)} s`].join(", ");
}

/** The `took` records of a node script (steps.ts timed) into a node's timings. */
export function addTimings(out: NodeOutcome, records: readonly NodeRecord[]): void {
  for (const r of recordsOf(records, "took")) {
    out.timings = [...(out.timings ?? []), { step: r.step, s: Math.round(r.ms / 100) / 10 }];
  }
}

export function utcStamp(d: Date = new Date()): string {
  return d
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d+Z$/, "Z");
}

/** Docker prints nanoseconds; Date parses milliseconds. */
export function parseTime(s: string | undefined | null): number | undefined {
  if (s === undefined || s === null || s === "") return undefined;
  const t = Date.parse(s.replace(/(\.\d{3})\d+/, "$1"));
  return Number.isNaN(t) ? undefined : t;
}
