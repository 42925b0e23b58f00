/**
 * `roll`: two replicas of one model behind the real LiteLLM proxy, `sm121 bench` streaming through
 * it at 5 requests a second while `pulumi up` restarts both with a recipe change (each engine loads
 * for 3 s): once rolling (the default), once with SM121_ROLL=all. Counted: the requests that
 * succeeded, failed and were retried by the proxy, and whether some replica served at every
 * moment (the engines' own serve and stop times). Target: 0 failed when rolling. Two nodes on
 * 127.0.0.125-126, sshd port 2325.
 */
import { overlapping, rollRecipe, rollSite, rollUnderLoad } from "../test/helpers/roll";
import { say } from "./lib/util";

export interface RollRow {
  mode: "rolling" | "SM121_ROLL=all";
  requests: number;
  ok: number;
  failed: number;
  retried: number;
  /** Some replica served at every moment of the up. */
  alwaysServing: boolean;
  upExit: number | null;
  upS: number;
}

const RATE = 5;
const REQUESTS = 200;

export async function measureRoll(): Promise<RollRow[]> {
  say("roll: starting 2 nodes (127.0.0.125-126:2325) and the LiteLLM proxy");
  const site = await rollSite({
    name: "benchroll",
    at: { firstIp: 125, sshPort: 2325 },
    proxyPort: 2326,
    startDelayS: 3,
  });
  try {
    const rows: RollRow[] = [];
    for (const [i, mode] of (["rolling", "SM121_ROLL=all"] as const).entries()) {
      const env: Record<string, string> = mode === "rolling" ? {} : { SM121_ROLL: "all" };
      const recipe = rollRecipe(16 << i);
      const run = await rollUnderLoad(site.e, site.proxy, { recipe, env, rate: RATE, requests: REQUESTS });
      const row: RollRow = {
        mode,
        requests: REQUESTS,
        ok: run.bench.completed,
        failed: run.bench.errors,
        retried: run.bench.retried,
        alwaysServing: !overlapping(run.downs),
        upExit: run.up.code,
        upS: Math.round(run.up.ms / 100) / 10,
      };
      const counts = `${row.ok} ok, ${row.failed} failed, ${row.retried} retried`;
      say(`roll: ${mode}: ${counts}; up ${row.upS} s, exit ${String(row.upExit)}`);
      rows.push(row);
    }
    return rows;
  } finally {
    await site.stop();
  }
}

/** The table's lines. */
export function rollLines(rows: readonly RollRow[]): string[] {
  const lines = [
    "",
    "roll: a recipe change on 2 replicas under load through LiteLLM (5 req/s, 200 requests)",
    "  MODE            OK   FAILED  RETRIED  ALWAYS-SERVING  UP-S   TARGET 0 failed (rolling)",
  ];
  for (const r of rows) {
    const target = r.mode === "rolling" ? (r.failed === 0 && r.upExit === 0 ? "met" : "missed") : "-";
    const counts = `${String(r.ok).padEnd(3)}  ${String(r.failed).padEnd(6)}  ${String(r.retried).padEnd(7)}`;
    lines.push(
      `  ${r.mode.padEnd(14)}  ${counts}  ` +
        `${(r.alwaysServing ? "yes" : "no").padEnd(14)}  ${String(r.upS).padEnd(5)}  ${target}`,
    );
  }
  return lines;
}
