/**
 * A bench stopped half-way stops its site (issue 49 item 9): SIGTERM to `node dist/bench/main.js` while its
 * roll section's two-node site runs leaves no daemon, container, proxy, directory or CPU group of it; a run
 * killed outright (SIGKILL) leaves them, and the next run stops them before it makes its own group.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO } from "../helpers/project";
import { siteProcesses } from "../site/procs";
import { waitFor } from "../site/faults";

interface Bench {
  child: ChildProcess;
  pid: number;
  /** The project directory its roll section makes (test/helpers/project's e2eProject). */
  dir: string;
  stderr: () => string;
  exited: Promise<number | null>;
}

function bench(): Bench {
  const child = spawn(process.execPath, [join(REPO, "dist", "bench", "main.js"), "--only", "roll"], {
    cwd: REPO,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  child.stderr?.on("data", (b: Buffer) => (err += b.toString()));
  const exited = new Promise<number | null>((resolve) =>
    child.on("exit", (code, signal) => resolve(code ?? (signal === null ? null : -1))),
  );
  const pid = child.pid ?? 0;
  return { child, pid, dir: `/tmp/sm121-e2e-benchroll-${pid}`, stderr: () => err, exited };
}

/** Its two nodes' sshds and Docker Engines run. */
const siteUp = (b: Bench) => () => existsSync(join(b.dir, "site", "site.json"));

/** The CPU groups named for that run, in any hierarchy (bench/lib/nodecpu.ts). */
function groupsOf(pid: number): string[] {
  const root = "/sys/fs/cgroup";
  if (!existsSync(root)) return [];
  const name = `benchroll-${pid}`;
  const places = [root, ...readdirSync(root).map((h) => join(root, h))];
  return places.map((p) => join(p, name)).filter((p) => existsSync(p));
}

/** The run's directories under /tmp (its projects, the floor's). */
const runDirs = (pid: number): string[] => readdirSync("/tmp").filter((d) => d.endsWith(`-${pid}`));

const started: Bench[] = [];
afterAll(() => {
  for (const b of started) b.child.kill("SIGKILL");
});

describe("a bench stopped half-way", () => {
  it("stops its site on SIGTERM: no process, directory or CPU group of it is left", async () => {
    const b = bench();
    started.push(b);
    await waitFor("the bench's site", siteUp(b), 360_000);
    expect(siteProcesses(b.dir).length).toBeGreaterThan(0);
    b.child.kill("SIGTERM");
    expect(await b.exited, b.stderr()).toBe(143);
    expect(b.stderr()).toContain("SIGTERM: stopping the sites this run started");
    expect(siteProcesses(b.dir)).toEqual([]);
    expect(existsSync(b.dir)).toBe(false);
    expect(groupsOf(b.pid)).toEqual([]);
    expect(runDirs(b.pid)).toEqual([]);
  }, 600_000);

  it("the next run stops what a run killed outright left, before it makes its own group", async () => {
    const killed = bench();
    started.push(killed);
    await waitFor("the first bench's site", siteUp(killed), 360_000);
    killed.child.kill("SIGKILL");
    await killed.exited;
    // What SIGKILL leaves: the site runs on without its bench.
    expect(siteProcesses(killed.dir).length).toBeGreaterThan(0);
    const next = bench();
    started.push(next);
    await waitFor("the next bench's site", siteUp(next), 360_000);
    expect(next.stderr()).toMatch(
      new RegExp(`stopping what a killed bench run left: .*sm121-e2e-benchroll-${killed.pid}`),
    );
    expect(siteProcesses(killed.dir)).toEqual([]);
    expect(existsSync(killed.dir)).toBe(false);
    expect(groupsOf(killed.pid)).toEqual([]);
    next.child.kill("SIGTERM");
    expect(await next.exited, next.stderr()).toBe(143);
    expect(siteProcesses(next.dir)).toEqual([]);
    expect(groupsOf(next.pid)).toEqual([]);
    expect(runDirs(killed.pid)).toEqual([]);
    expect(runDirs(next.pid)).toEqual([]);
  }, 900_000);
});
