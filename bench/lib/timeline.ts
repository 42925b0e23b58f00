/**
 * Where the time of one `pulumi up` goes, from the engine's own log (`--logtostderr -v=9
 * --logflow`: one JSON object per line with an RFC 3339 time) joined with the node-side channel
 * times and the engine's log times. Used for one profiled run per configuration, outside the
 * medians (verbose logging costs a little time itself).
 */
import { parseNano } from "./nodelogs";

export const PROFILE_FLAGS = ["--logtostderr", "-v=9", "--logflow"];

interface Line {
  t: number;
  msg: string;
}

function lines(stderr: string): Line[] {
  const out: Line[] = [];
  for (const raw of stderr.split("\n")) {
    if (!raw.startsWith("{")) continue;
    try {
      const j = JSON.parse(raw) as { time?: unknown; msg?: unknown };
      if (typeof j.time === "string" && typeof j.msg === "string") out.push({ t: parseNano(j.time), msg: j.msg });
    } catch {
      // program output or a partial line
    }
  }
  return out;
}

/** Named moments of the run, ms since the epoch; missing ones are left out. */
export type Moments = Record<string, number>;

const MARKS: Array<[string, RegExp, "first" | "last"]> = [
  ["cli start", /^CLI Metadata/, "first"],
  ["language host runs the program", /^langhost\[nodejs\]\.Run\(/, "first"],
  ["Stack registered (Node.js + @pulumi/pulumi up)", /RegisterResource received: t=pulumi:pulumi:Stack/, "first"],
  ["program: first sm121 resource registered", /RegisterResource received: t=sm121:/, "first"],
  ["dynamic provider plugin launched", /newPlugin\(\): Launching plugin 'pulumi-nodejs \(resource\)'/, "first"],
  ["dynamic provider plugin answers", /^Provider\[[^\]]+\]\.GetPluginInfo\(\) executing/, "first"],
  ["first Check", /^Provider\[[^\]]+\]\.Check\(.*dynamic.*\):? executing/, "first"],
  ["first Diff", /^Provider\[[^\]]+\]\.Diff\(.*dynamic.*\):? executing/, "first"],
  ["last Diff done", /^Provider\[[^\]]+\]\.Diff\(.*dynamic.*\):? success/, "last"],
  ["operation starts", /^Provider\[[^\]]+\]\.(Create|Update|Delete|Read)\(.*dynamic.*\):? executing/, "first"],
  ["operation done", /^Provider\[[^\]]+\]\.(Create|Update|Delete|Read)\(.*dynamic.*\):? success/, "last"],
  ["program exited", /^Program exited/, "first"],
  ["update complete", /Update\(preview=\w+\) complete|Destroy\(preview=\w+\) complete/, "first"],
];

export function moments(stderr: string): Moments {
  const ls = lines(stderr);
  const m: Moments = {};
  for (const [name, re, which] of MARKS) {
    const hits = ls.filter((l) => re.test(l.msg));
    const hit = which === "first" ? hits[0] : hits[hits.length - 1];
    if (hit !== undefined) m[name] = hit.t;
  }
  return m;
}

export interface TimelineRow {
  event: string;
  /** ms after the pulumi process was started */
  atMs: number;
  /** ms since the previous row */
  deltaMs: number;
}

/** Every moment, sorted, relative to `t0` (the spawn of `pulumi`). */
export function timeline(t0: number, ...sources: Moments[]): TimelineRow[] {
  const all: Array<[string, number]> = [];
  for (const s of sources) for (const [k, v] of Object.entries(s)) all.push([k, v]);
  all.sort((a, b) => a[1] - b[1]);
  let prev = t0;
  return all.map(([event, t]) => {
    const row = { event, atMs: Math.round(t - t0), deltaMs: Math.round(t - prev) };
    prev = t;
    return row;
  });
}
