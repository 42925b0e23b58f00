/**
 * The sites a bench run starts end with it. A bench stopped half-way (SIGTERM, Ctrl-C) stops every site it
 * started (daemons, containers and all) and closes its nodes' CPU groups before it exits; a run finds the
 * sites of a run that was killed outright (SIGKILL) and stops them before it makes a group of its own.
 */
import { existsSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { descendants, terminate } from "../../test/site/procs";
import { stopStaleSite } from "../../test/site/site";
import { closeOpenGroups } from "./nodecpu";
import { say } from "./util";

const TMP = "/tmp";
/**
 * A run's directories: what e2eProject names a bench project's directory (its site under site/), and the
 * floor's projects (bench/floor.ts), each ending in the run's pid.
 */
const RUN_DIR = /^sm121-(?:e2e-bench[a-z0-9]*|bench-floor)-(\d+)$/;
/** The copies section's site (bench/copies.ts). */
export const COPIES_SITE = join(tmpdir(), "sm121-bench-copies");

const alive = (pid: number): boolean => existsSync(`/proc/${pid}`);

/** The bench directories under /tmp whose run is `owner` (or, for null, whose run is gone). */
function runDirs(owner: number | null): string[] {
  return readdirSync(TMP).filter((d) => {
    const pid = Number(RUN_DIR.exec(d)?.[1] ?? Number.NaN);
    if (Number.isNaN(pid)) return false;
    return owner === null ? !alive(pid) : pid === owner;
  });
}

/** Each directory's site, then whatever else names it (a LiteLLM proxy beside it), then its files. */
async function stopAndRemove(dirs: string[]): Promise<void> {
  for (const d of dirs) {
    await stopStaleSite(join(TMP, d, "site"));
    await stopStaleSite(join(TMP, d));
    rmSync(join(TMP, d), { recursive: true, force: true });
  }
}

/** Sites left by a bench run that was killed: stopped and removed, so that their CPU groups can go too. */
export async function reapStaleSites(): Promise<void> {
  const stale = runDirs(null);
  if (stale.length === 0) return;
  say(`stopping what a killed bench run left: ${stale.join(", ")}`);
  await stopAndRemove(stale);
}

/**
 * Everything this run started: its sites (copies' too) while their daemons still answer, then the processes
 * it started that are still running (a pulumi up, a LiteLLM proxy), then its directories and CPU groups.
 */
export async function stopOwnSites(): Promise<void> {
  const mine = runDirs(process.pid);
  for (const d of mine) await stopStaleSite(join(TMP, d, "site"));
  await stopStaleSite(COPIES_SITE);
  await terminate(descendants(process.pid), 5000);
  await stopAndRemove(mine);
  rmSync(COPIES_SITE, { recursive: true, force: true });
  closeOpenGroups();
}
