/**
 * What a serve, stop or refresh found (DeploymentOutcome), and the same as the state stores it
 * (StoredOutcome): there the failure is a message key and its arguments, worded where it is
 * printed, so that the state is the same bytes whatever the language of the operator who ran the up.
 */
import { recordsOf, type NodeRecord } from "../protocol";
import { listMsg, msg, type Msg } from "../text/messages";
import type { RunningImage } from "./digest";
import type { ReadyPhases } from "./phases";

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
  /**
   * From the start of readiness to the first token of a one-token chat completion (seconds), and
   * that completion's own time (ms).
   */
  readyS?: number;
  ttftMs?: number;
  /** The node's boot id when the last up found the engine ready there (serve/nodelife). */
  bootId?: string;
  /** Seconds each step of the last up took on this node, in the order they ran (a list: the state keeps its order). */
  timings?: StepTiming[];
  /** The image the node's container runs, by digest (docker). */
  image?: RunningImage;
  /** Where the time to ready of the last start went (an API node the up restarted). */
  ready?: ReadyPhases;
}

export interface StepTiming {
  step: string;
  s: number;
}

export interface DeploymentOutcome {
  status: "serving" | "failed" | "stopped" | "drifted";
  nodes: NodeOutcome[];
  /** Messages (src/text/messages), said in the reader's language where they are printed. */
  warnings: Msg[];
  servedModel?: string;
  maxModelLen?: number;
  /** The step that failed and why, when status is failed (serve's and stop's first line). */
  failure?: string;
  rolledBack?: boolean;
  /** The restarts that the engine's health caused (a dead or hung engine), within sm121:liveness windowS. */
  restarts?: Array<{ at: string; causes: Msg[] }>;
  /** Restarted maxRestarts times within windowS: failed, and left alone until SM121_RESTART=1. */
  held?: boolean;
  /**
   * The operator's Ctrl-C stopped the up at this step: the nodes keep what it had done, and the next
   * up finishes it (restarting only a node that does not run the bundle) instead of restarting all.
   */
  interrupted?: ServeStep;
}

/** The outcome in the state: its failure a message (src/text/messages/state), not words. */
export interface StoredOutcome extends Omit<DeploymentOutcome, "failure"> {
  failure?: Msg;
}

/** The steps of a serve after the stop began, as its failure names them. */
export type ServeStep = "stop" | "write" | "memory gate, write and start" | "readiness" | "gate";

const STEP_KEYS = {
  stop: "state.step.stop",
  write: "state.step.write",
  "memory gate, write and start": "state.step.start",
  readiness: "state.step.readiness",
  gate: "state.step.gate",
} as const satisfies Record<ServeStep, string>;

/**
 * An outcome as the state keeps it. `step`: the serve step that failed, whose name is said in the
 * reader's language; what follows it (the node's or the transport's own account) stays as found.
 * Without a step (a stop's or a refresh's finding) the failure is kept as found.
 */
export function toStored(o: DeploymentOutcome, step?: ServeStep): StoredOutcome {
  const { failure, ...rest } = o;
  if (failure === undefined) return rest;
  if (step === undefined) return { ...rest, failure: msg("state.asFound", { text: failure }) };
  // serve() writes `<step> failed: <detail>` with the step it was given: the detail is what follows.
  const head = `${step} failed: `;
  const detail = failure.startsWith(head) ? failure.slice(head.length) : failure;
  return { ...rest, failure: stepFailed(step, detail) };
}

/** `<step> failed: <detail>`, the step said in the reader's language. */
export function stepFailed(step: ServeStep, detail: string): Msg {
  return msg("state.stepFailed", { step: stepName(step), detail });
}

/** A step's name, said in the reader's language. */
export function stepName(step: ServeStep): Msg {
  return msg(STEP_KEYS[step]);
}

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

/** `stop 0.4 s, ..., total 26.1 s`: a node's step timings in one line, its step names as they are. */
export function timingLine(t: readonly StepTiming[]): Msg {
  const total = t.reduce((a, b) => a + b.s, 0);
  const steps = t.map((x) => msg("serve.timingStep", { step: x.step, seconds: x.s.toFixed(1) }));
  return listMsg([...steps, msg("serve.timingTotal", { seconds: total.toFixed(1) })]);
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
