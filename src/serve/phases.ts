/**
 * Where the time to ready went, per start of an engine: the copies before it (model, image), the
 * memory gate, the start (the container or process and the engine's own start-up besides what
 * follows), the weights' load and the graphs (compile, capture) as the engine's log says them
 * (engines/phases), and the first token. The parts add up to the whole, from the memory gate to
 * the first token. The up keeps them in the state and on the node (`<stateDir>/ready.json`), where
 * `sm121 status` and the next plan-time look read them.
 */
import { z } from "zod";
import { phasePattern, readLogPhases } from "../engines/phases";
import type { EngineName } from "../recipe/types";
import type { NodeBundle } from "../render/types";
import { printRecord, recordsOf, type NodeRecord } from "../protocol";
import { listMsg, msg, type MessageKey, type Msg } from "../text/messages";
import { nodePath, quote } from "../text/shell";

/** One start's split, in seconds; `at`: when it answered its first token. */
export interface ReadyPhases {
  at: string;
  totalS: number;
  copyS?: number;
  memoryGateS?: number;
  startS: number;
  loadS?: number;
  graphsS?: number;
  firstTokenS: number;
}

/** The node's copy of the last start's split. */
export const READY_FILE = "ready.json";

/** Files the copies leave for the next start (ImageSync, ModelCache): milliseconds, one number. */
export const COPIED_FILES = { image: "copied-image", model: "copied-model" } as const;

/** Lines for the verify step: the engine log's phase lines (in "$log") as a record. */
export function phaseLinesScript(engine: EngineName): string {
  const re = phasePattern(engine);
  if (re === undefined) return ":";
  const lines = `"$(grep -E ${quote(re)} "$log" | tail -n 40 | base64 -w0)"`;
  return printRecord("readyPhases", '"lines64":"%s"', lines);
}

/** Lines for the start step: the copies made since the last start, as records; the files go. */
export function copiedScript(nb: NodeBundle): string {
  const d = nodePath(nb.stateDir);
  return Object.entries(COPIED_FILES)
    .map(([what, f]) =>
      [
        `if [ -f ${d}/${f} ]; then cms=; IFS= read -r cms < ${d}/${f} || true; rm -f ${d}/${f}`,
        `  case "$cms" in ''|*[!0-9]*) ;; *) ${printRecord("copied", '"what":"%s","ms":%d', `${what} "$cms"`)};; esac`,
        "fi",
      ].join("\n"),
    )
    .join("\n");
}

/** A shell line that records a copy's milliseconds for the next start on the node (`$ms`). */
export function recordCopyLine(stateDir: string, what: keyof typeof COPIED_FILES, ms: number): string {
  const d = nodePath(stateDir);
  return `mkdir -p ${d} && printf '%s\\n' ${Math.max(0, Math.round(ms))} > ${d}/${COPIED_FILES[what]}`;
}

/** The seconds a timed step took (steps.ts `timed`); undefined when it did not run. */
const took = (records: readonly NodeRecord[], step: string): number | undefined => {
  const mine = recordsOf(records, "took").filter((r) => r.step === step);
  return mine.length === 0 ? undefined : mine.reduce((a, r) => a + r.ms, 0) / 1000;
};

const round = (v: number) => Math.round(v * 10) / 10;

/**
 * The split of one start from its node's records (the start step's `took` and `copied`, readiness'
 * `firstToken`, verify's `readyPhases`): what the log does not say stays in the start.
 */
export function readyPhases(engine: EngineName, records: readonly NodeRecord[], at: Date): ReadyPhases | undefined {
  const first = recordsOf(records, "firstToken")[0];
  if (first === undefined) return undefined;
  const lines = recordsOf(records, "readyPhases").flatMap((r) =>
    Buffer.from(r.lines64, "base64").toString("utf8").split("\n"),
  );
  const log = readLogPhases(engine, lines);
  const copyMs = recordsOf(records, "copied").reduce((a, r) => a + r.ms, 0);
  const memoryGateS = took(records, "memory-gate");
  const started = took(records, "start") ?? 0;
  const readyS = first.readyMs / 1000;
  const firstTokenS = Math.min(readyS, first.ttftMs / 1000);
  let left = readyS - firstTokenS;
  const loadS = log.loadS === undefined ? undefined : Math.min(left, log.loadS);
  left -= loadS ?? 0;
  const graphsS = log.graphsS === undefined ? undefined : Math.min(left, log.graphsS);
  left -= graphsS ?? 0;
  const copyS = copyMs > 0 ? copyMs / 1000 : undefined;
  const totalS = (copyS ?? 0) + (memoryGateS ?? 0) + started + readyS;
  return {
    at: at.toISOString(),
    totalS: round(totalS),
    ...(copyS !== undefined && { copyS: round(copyS) }),
    ...(memoryGateS !== undefined && { memoryGateS: round(memoryGateS) }),
    startS: round(started + left),
    ...(loadS !== undefined && { loadS: round(loadS) }),
    ...(graphsS !== undefined && { graphsS: round(graphsS) }),
    firstTokenS: round(firstTokenS),
  };
}

/** The node's copy of the split, written once the engine answered. */
export function writeReadyScript(nb: NodeBundle, p: ReadyPhases): string {
  return `printf '%s\\n' ${quote(JSON.stringify(p))} > ${nodePath(nb.stateDir)}/${READY_FILE}`;
}

/** Lines that print the node's copy of the last split, as a record (the look, status). */
export function readyFileScript(stateDir: string): string {
  const f = `${nodePath(stateDir)}/${READY_FILE}`;
  return `if [ -f ${f} ]; then ${printRecord("lastReady", '"json64":"%s"', `"$(head -c 2000 ${f} | base64 -w0)"`)}; fi`;
}

/** A split as the state, the node's copy and `sm121 status --json` hold it: numbers only. */
export function readySchema() {
  const s = () => z.number().nonnegative().finite();
  return z.strictObject({
    at: z.string().max(40),
    totalS: s(),
    copyS: s().optional(),
    memoryGateS: s().optional(),
    startS: s(),
    loadS: s().optional(),
    graphsS: s().optional(),
    firstTokenS: s(),
  });
}

/** The node's copy read back (hostile input: a schema, numbers only); undefined when it is no split. */
export function parseReady(json64: string): ReadyPhases | undefined {
  try {
    const r = readySchema().safeParse(JSON.parse(Buffer.from(json64, "base64").toString("utf8")));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** A duration as the split says it: `0.4 s`, `38 s`, `7 m 12 s`, `1 h 4 m`. */
export function durationWords(s: number): string {
  if (s < 10) return `${s.toFixed(1)} s`;
  if (s < 60) return `${Math.round(s)} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${Math.round(s - m * 60)} s`;
  return `${Math.floor(m / 60)} h ${m % 60} m`;
}

const PARTS = [
  ["copyS", "serve.ready.copy"],
  ["memoryGateS", "serve.ready.memoryGate"],
  ["startS", "serve.ready.start"],
  ["loadS", "serve.ready.load"],
  ["graphsS", "serve.ready.graphs"],
  ["firstTokenS", "serve.ready.firstToken"],
] as const satisfies ReadonlyArray<readonly [keyof ReadyPhases, MessageKey]>;

/** "last ready in 9 m 40 s: load 7 m 12 s, graphs 1 m 50 s, first token 38 s" (`node`: whose). */
export function readyWords(p: ReadyPhases, node?: string): Msg {
  const parts = PARTS.flatMap(([k, key]) => {
    const v = p[k];
    return v === undefined ? [] : [msg("serve.ready.part", { name: msg(key), time: durationWords(v) })];
  });
  const total = durationWords(p.totalS);
  const split = listMsg(parts);
  return node === undefined
    ? msg("serve.ready.split", { total, parts: split })
    : msg("serve.ready.splitOn", { node, total, parts: split });
}
