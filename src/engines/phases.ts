/**
 * Where an engine's start went, from its own log lines: how long it loaded the weights, and how
 * long it compiled and captured graphs. vLLM prints `Loading weights took 12.34 seconds`
 * (model_loader; the GPU runner also `Model loading took 15.2 GiB and 13.10 seconds`), `Graph
 * capturing finished in 45 secs, took 1.20 GiB`, and `init engine (profile, create kv cache,
 * warmup model) took 40.00 s (compilation: 21.50 s)` (0.32.0: `took 0.43 s` without compilation
 * on its CPU build with --enforce-eager); SGLang `Load weight end. elapsed=12.34 s, ...` and
 * `Capture cuda graph end. Time elapsed: 30.12 s. ...`. What an engine prints is hostile input:
 * the lines travel base64 and only the numbers these patterns take are read.
 */
import type { EngineName } from "../recipe/types";

/** What the log says of a start, in seconds; a part the log does not name stays undefined. */
export interface LogPhases {
  /** Loading the weights (the model loader's own time). */
  loadS?: number;
  /** Compiling (torch.compile, inductor) and capturing graphs (CUDA graphs). */
  graphsS?: number;
}

interface PhaseLine {
  /** An extended regular expression (grep -E on the node) whose first group is seconds. */
  re: string;
  part: keyof LogPhases;
  /** Lines of the same part: the first that is found counts (vLLM's two load lines say one load). */
  rank: number;
}

const VLLM: readonly PhaseLine[] = [
  { re: "Model loading took [0-9.]+ GiB( memory)? and ([0-9.]+) seconds", part: "loadS", rank: 0 },
  { re: "Loading weights took ([0-9.]+) seconds", part: "loadS", rank: 1 },
  { re: "Graph capturing finished in ([0-9.]+) secs", part: "graphsS", rank: 0 },
  { re: "warmup model\\) took [0-9.]+ s(econds)? \\(compilation: ([0-9.]+) s", part: "graphsS", rank: 0 },
];

const SGLANG: readonly PhaseLine[] = [
  { re: "Load weight end\\. elapsed=([0-9.]+) s", part: "loadS", rank: 0 },
  { re: "Capture cuda graph end\\. Time elapsed: ([0-9.]+) s", part: "graphsS", rank: 0 },
];

/** The lines of each engine; gr8 and DGPP print none sm121 knows. */
const LINES = { vllm: VLLM, sglang: SGLANG, gr8: [], dgpp: [] } satisfies Record<EngineName, readonly PhaseLine[]>;

/** One extended regular expression for the node's grep: every line a phase of `engine` is read from. */
export function phasePattern(engine: EngineName): string | undefined {
  const lines = LINES[engine];
  return lines.length === 0 ? undefined : lines.map((l) => `(${l.re})`).join("|");
}

/** The seconds the last group of `re` takes in `line`, when it matches. */
function secondsIn(re: string, line: string): number | undefined {
  const m = new RegExp(re).exec(line);
  const v = m === null ? undefined : m[m.length - 1];
  if (v === undefined) return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

/**
 * The phases of the last start in `lines` (the engine log's lines, oldest first): each part from
 * its best-ranked line, the last one printed. Graphs add up a compile and a capture.
 */
export function readLogPhases(engine: EngineName, lines: readonly string[]): LogPhases {
  const out: LogPhases = {};
  const best = new Map<string, { rank: number; s: number }>();
  for (const line of lines) {
    for (const l of LINES[engine]) {
      const s = secondsIn(l.re, line);
      if (s === undefined) continue;
      const key = `${l.part}:${l.re}`;
      best.set(key, { rank: l.rank, s });
    }
  }
  for (const part of ["loadS", "graphsS"] as const) {
    const found = LINES[engine].filter((l) => l.part === part);
    const ranks = [...new Set(found.map((l) => l.rank))].sort((a, b) => a - b);
    for (const rank of ranks) {
      const same = found.filter((l) => l.rank === rank).flatMap((l) => best.get(`${part}:${l.re}`)?.s ?? []);
      if (same.length > 0) {
        out[part] = same.reduce((a, b) => a + b, 0);
        break;
      }
    }
  }
  return out;
}
