/**
 * Seed 001's `--timeout-s N` and `--min-mem-gib N` as per-run overrides, SM121_TIMEOUT_S and
 * SM121_MIN_MEM_GIB: read where the other per-run allowances are (the program), validated before any
 * node is touched, shown in the plan, and applied by the serve of this run only. They are no part
 * of the bundle or its identity: an override alone restarts nothing, and the next run without it
 * waits as the recipe and the site say.
 */
import type { DeploymentBundle } from "./types";

export interface RunOverrides {
  /** SM121_TIMEOUT_S: the whole readiness wait of this run, instead of readiness.timeout_s + grace. */
  timeoutS?: number;
  /** SM121_MIN_MEM_GIB: the memory gate of this run on every node, instead of minMemAvailableGiB. */
  minMemGiB?: number;
}

interface Range {
  key: keyof RunOverrides;
  min: number;
  max: number;
  whole: boolean;
  what: string;
  example: string;
  otherwise: string;
}

/** Each override: its field, its allowed range, and what holds when it is not set. */
export const OVERRIDES = {
  SM121_TIMEOUT_S: {
    key: "timeoutS",
    min: 1,
    max: 86_400,
    whole: true,
    what: "a whole number of seconds",
    example: "3600",
    otherwise: "the recipe's readiness.timeout_s plus sm121:readyGraceS",
  },
  SM121_MIN_MEM_GIB: {
    key: "minMemGiB",
    min: 1,
    max: 1024,
    whole: false,
    what: "a number of GiB",
    example: "90",
    otherwise: "the node's minMemAvailableGiB, else sm121:minMemAvailableGiB",
  },
} as const satisfies Record<string, Range>;

export type OverrideName = keyof typeof OVERRIDES;

/** Why a value is refused, or undefined when it is allowed. */
function refusal(name: OverrideName, raw: string): string | undefined {
  const r: Range = OVERRIDES[name];
  const n = /^\s*\d+(\.\d+)?\s*$/.test(raw) ? Number(raw) : Number.NaN;
  const ok = Number.isFinite(n) && n >= r.min && n <= r.max && (!r.whole || Number.isInteger(n));
  if (ok) return undefined;
  return (
    `${name}=${JSON.stringify(raw)} is not ${r.what} from ${r.min} to ${r.max}; ` +
    `set it to e.g. ${name}=${r.example}, or unset it for ${r.otherwise}`
  );
}

/** The overrides of this run from the environment; every bad value refused, each with its name and range. */
export function readOverrides(env: Readonly<Record<string, string | undefined>>): RunOverrides {
  const out: RunOverrides = {};
  const bad: string[] = [];
  for (const name of Object.keys(OVERRIDES) as OverrideName[]) {
    const raw = env[name];
    if (raw === undefined || raw === "") continue;
    const why = refusal(name, raw);
    if (why !== undefined) bad.push(why);
    else out[OVERRIDES[name].key] = Number(raw);
  }
  if (bad.length > 0) throw new Error(bad.join("\n"));
  return out;
}

/** The bundle as this run serves it: the declared one with the overrides applied; its identity unchanged. */
export function withOverrides(b: DeploymentBundle, o: RunOverrides): DeploymentBundle {
  const { timeoutS, minMemGiB } = o;
  if (timeoutS === undefined && minMemGiB === undefined) return b;
  const { graceS: _declared, ...readiness } = b.readiness;
  return {
    ...b,
    readiness: timeoutS === undefined ? b.readiness : { ...readiness, timeoutS },
    nodes: minMemGiB === undefined ? b.nodes : b.nodes.map((n) => ({ ...n, memGateGiB: minMemGiB })),
  };
}
