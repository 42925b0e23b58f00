/**
 * What the stack's lock in PostgreSQL does not cover, and what the nodes' locks do, through the
 * real Pulumi CLI. A CI job SIGKILLed in the middle of an up leaves its stack lock behind: its
 * provider ends with its CLI, so the nodes' locks go at once, the next up is refused with the dead
 * run and `pulumi cancel` named, and after the cancel one up converges. And when the stack lock
 * of a run that still works is cleared by mistake, the second run reaches the nodes but waits for
 * each node's lock, saying whose run holds it: no node is worked on by both at once.
 * The blocks build on each other in order (one site, one stack).
 */
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { alive } from "../helpers/project";
import {
  engineLog,
  moveToPostgres,
  nodeLockFree,
  nodeLockHolder,
  providerOf,
  recordMove,
  runnerB,
  servedLens,
  STACK_LOCKED,
  startsAt,
  setGates,
  TEAM,
  teamProject,
  tmuxSessions,
  until,
  type Checkout,
  type Team,
} from "../helpers/team";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const SINCE = String.raw`since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`;
const CLEAN = /ci-deploy: pulumi preview: nothing to do \(\d+ unchanged\)/;

describe.sequential("a killed runner and a cleared stack lock: the nodes' locks", () => {
  let t: Team;
  let a: Checkout;
  let b: Checkout;
  let nodes: SimNode[];
  const locks = () => Number(t.pg.sql("SELECT count(*) FROM pulumi_state WHERE key LIKE '%/.pulumi/locks/%';").trim());
  const heldBy = (pid: number) => nodes.every((n) => !nodeLockFree(n) && nodeLockHolder(n).includes(`pid ${pid})`));

  beforeAll(async () => {
    t = await teamProject("teamkill", AT.site(), AT.port(0));
    a = t.a;
    nodes = t.e.site.nodes;
    const first = await a.pulumi(["up", "--yes", "--skip-preview"]).done;
    expect(first.code, first.all).toBe(0);
    for (const r of await moveToPostgres(a, "sim", t.pg, join(t.base, "sim-state.json"))) expect(r.code, r.all).toBe(0);
    const move = await recordMove(a, nodes).done;
    expect(move.code, move.all).toBe(0);
    b = runnerB(t);
  });
  afterAll(async () => {
    await t?.pg.stop();
    await t?.e.stop();
  });

  it("a CI job SIGKILLed mid-up: node locks go, the stale stack lock names pulumi cancel; an up heals", async () => {
    b.setMaxLen(10240);
    // The new engines load for 15 s: the job dies while the up waits for them.
    for (const n of nodes) setEngineBehaviour(n, { startDelayS: 15 });
    const job = b.ciDeploy(["up", "--stack", "sim"]);
    const loading = () => nodes.every((n, i) => startsAt(n, TEAM[i]?.name ?? "", 10240) > 0);
    // Two minutes: on a loaded machine the stop, the memory wait and the starts can take a while.
    const started = await until(() => loading() && job.pulumiPids.size === 1, 100_000);
    const logs = () =>
      nodes
        .map((n, i) =>
          engineLog(n, TEAM[i]?.name ?? "")
            .slice(-5)
            .join("\n"),
        )
        .join("\n");
    expect(started, `${job.output()}\n${logs()}`).toBe(true);
    const cli = [...job.pulumiPids][0] ?? 0;
    const provider = providerOf(cli) ?? 0;
    expect(provider).toBeGreaterThan(0);
    // The nodes are held by this run's provider, named as Pulumi names the stack lock's holder.
    expect(await until(() => heldBy(provider), 10_000)).toBe(true);
    const named = new RegExp(`^stack sim \\(\\S+@\\S+, pid ${provider}\\) ${SINCE}\n$`);
    expect(nodeLockHolder(nodes[0] as SimNode)).toMatch(named);
    // The runner dies: SIGKILL to the job's process group (the script, tee and the Pulumi CLI;
    // the CLI's plugins run in groups of their own, as the CLI starts them).
    process.kill(-job.pid, "SIGKILL");
    await job.done;
    // Killed at once, but reaped by whoever inherits it: until then its pid still answers.
    expect(await until(() => !alive(cli), 10_000)).toBe(true);
    expect(await until(() => !alive(provider), 20_000)).toBe(true);
    expect(await until(() => nodes.every(nodeLockFree), 20_000)).toBe(true);
    for (const n of nodes) setEngineBehaviour(n, null);
    // The stack's lock stays in PostgreSQL, and the next up names the dead CLI.
    expect(locks()).toBe(1);
    const retry = await b.ciDeploy(["up", "--stack", "sim"]).done;
    t.keep("kill-retry", retry.all);
    expect(retry.code).not.toBe(0);
    expect(retry.stdout).toMatch(/ci-deploy: pulumi up FAILED \(exit \d+\)/);
    expect(Number(STACK_LOCKED.exec(retry.all)?.[3])).toBe(cli);
    // Its pid is gone on the machine it names: the lock is stale, and pulumi cancel clears it.
    const cancel = await b.pulumi(["cancel", "--yes", "--stack", "sim"]).done;
    t.keep("kill-cancel", cancel.all);
    expect(cancel.code, cancel.all).toBe(0);
    expect(cancel.stdout).toContain("The currently running update for 'sim' has been canceled!");
    expect(locks()).toBe(0);
    const next = await b.ciDeploy(["up", "--stack", "sim"]).done;
    t.keep("kill-next-up", next.all);
    expect(next.code, next.all).toBe(0);
    expect(next.all).toContain("interrupted while updating");
    for (const [i, n] of nodes.entries()) {
      expect(await servedLens(n, TEAM[i]?.port ?? 0)).toEqual([10240]);
      expect(tmuxSessions(n)).toEqual([`sm121-${TEAM[i]?.name ?? ""}-0`]);
    }
    const again = await b.ciDeploy(["preview", "--stack", "sim"]).done;
    expect(again.stdout, again.all).toMatch(CLEAN);
  }, 240_000);

  it("a cancelled CI job (SIGINT, then SIGTERM to the script, as GitHub sends them) leaves no lock", async () => {
    b.setMaxLen(9216);
    for (const n of nodes) setEngineBehaviour(n, { startDelayS: 20 });
    const job = b.ciDeploy(["up", "--stack", "sim"]);
    const loading = () => nodes.every((n, i) => startsAt(n, TEAM[i]?.name ?? "", 9216) > 0);
    expect(await until(loading, 100_000), job.output()).toBe(true);
    process.kill(job.pid, "SIGINT");
    expect(await until(() => job.output().includes("^C received; cancelling."), 10_000), job.output()).toBe(true);
    // GitHub's cancel: SIGTERM 7.5 s after the SIGINT if the job still runs, SIGKILL 2.5 s later.
    let ended = false;
    void job.done.then(() => (ended = true));
    const termAt = Date.now();
    const term = !(await until(() => ended, 7_500));
    if (term) process.kill(job.pid, "SIGTERM");
    const cancelled = await job.done;
    // How long the job took after the SIGINT, and whether it needed the SIGTERM, is kept, not asserted.
    const how = `${term ? "after SIGTERM" : "before any SIGTERM"}, ${Date.now() - termAt} ms after the SIGINT`;
    t.keep("cancelled-job", `${cancelled.all}\n[test] the job ended ${how}\n`);
    expect(cancelled.stdout).toMatch(/ci-deploy: pulumi up FAILED \(exit \d+\)/);
    expect(locks()).toBe(0);
    expect(await until(() => nodes.every(nodeLockFree), 20_000)).toBe(true);
    for (const n of nodes) setEngineBehaviour(n, null);
    const next = await b.ciDeploy(["up", "--stack", "sim"]).done;
    t.keep("cancelled-next-up", next.all);
    expect(next.code, next.all).toBe(0);
    for (const [i, n] of nodes.entries()) expect(await servedLens(n, TEAM[i]?.port ?? 0)).toEqual([9216]);
  }, 240_000);

  it("a stack lock cleared while its run still works: the second waits for each node, naming the first", async () => {
    // A's engines wait in their before_serve hook, under the nodes' locks, until B waits too.
    a.setMaxLen(16384, true);
    b.setMaxLen(12288);
    setGates(nodes, false);
    const first = a.pulumi(["up", "--yes", "--skip-preview"]);
    // A works on the nodes: their locks name A's provider.
    const aCli = () => [...first.pulumiPids][0] ?? 0;
    expect(await until(() => first.pulumiPids.size === 1 && providerOf(aCli()) !== undefined, 60_000)).toBe(true);
    const aProvider = providerOf(aCli()) ?? 0;
    expect(await until(() => heldBy(aProvider), 60_000)).toBe(true);
    // The mistake: B clears the stack lock of a live run, then ups.
    expect((await b.pulumi(["cancel", "--yes", "--stack", "sim"]).done).code).toBe(0);
    const secondRun = b.ciDeploy(["up", "--stack", "sim"]);
    const holder = `stack sim \\(\\S+@\\S+, pid ${aProvider}\\) ${SINCE}`;
    const waited = nodes.map((n) => new RegExp(`${n.name}: waiting up to 60 s for the node's lock, held by ${holder}`));
    const waiting = await until(() => waited.every((w) => w.test(secondRun.output())), 60_000);
    setGates(nodes, true);
    const [ra, second] = await Promise.all([first.done, secondRun.done]);
    t.keep("cleared-a", ra.all);
    t.keep("cleared-b", second.all);
    expect(waiting, second.all).toBe(true);
    expect([ra.code, second.code], `${ra.all}\n${second.all}`).toEqual([0, 0]);
    // Each node's engine log: A's engine started and became ready before B's started.
    nodes.forEach((n, i) => {
      const log = engineLog(n, TEAM[i]?.name ?? "");
      const aStart = log.findIndex((l) => l.includes("'max_model_len': 16384}"));
      const aReady = log.findIndex((l, j) => j > aStart && l.includes("Application startup complete."));
      const bStart = log.findIndex((l) => l.includes("'max_model_len': 12288}"));
      expect([aStart > -1, aStart < aReady, aReady < bStart], log.join("\n")).toEqual([true, true, true]);
    });
    // Whatever each run's last save left, one up from B converges and a preview then is clean.
    const settle = await b.ciDeploy(["up", "--stack", "sim"]).done;
    t.keep("cleared-settle", settle.all);
    expect(settle.code, settle.all).toBe(0);
    for (const [i, n] of nodes.entries()) expect(await servedLens(n, TEAM[i]?.port ?? 0)).toEqual([12288]);
    expect((await b.ciDeploy(["preview", "--stack", "sim"]).done).stdout).toMatch(CLEAN);
  });

  it("destroys from the operator's checkout", async () => {
    const d = await a.pulumi(["destroy", "--yes", "--skip-preview"]).done;
    expect(d.code, d.all).toBe(0);
    for (const n of nodes) expect([nodeLockFree(n), tmuxSessions(n)]).toEqual([true, []]);
  });
});
