/**
 * A team on one site, through the real Pulumi CLI: the stack's state moves from the file backend
 * into a real PostgreSQL (export, import) without restarting an engine; a CI runner at another
 * path, with its own home and known_hosts, previews the same stack and sees no change; and when
 * the operator and the runner run `pulumi up` at the same moment with different changes, exactly
 * one serves, the other is refused by the stack's lock with a message naming the winner's run,
 * and no node ever starts the loser's bundle (the engines' own start records on the nodes).
 * The blocks build on each other in order (one site, one stack).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  engineStarts,
  moveToPostgres,
  ownerRecord,
  recordMove,
  runnerB,
  setGates,
  STACK_LOCKED,
  startsAt,
  TEAM,
  teamProject,
  type Checkout,
  type Team,
} from "../helpers/team";
import { allocate } from "../site/alloc";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

describe.sequential("a team on one site: the state in PostgreSQL, an operator and a CI runner", () => {
  let t: Team;
  let a: Checkout;
  let b: Checkout;
  let nodes: SimNode[];
  const starts = () => nodes.map((n, i) => engineStarts(n, TEAM[i]?.name ?? ""));

  beforeAll(async () => {
    t = await teamProject("team", AT.site(), AT.port(0));
    a = t.a;
    nodes = t.e.site.nodes;
  });
  afterAll(async () => {
    await t?.pg.stop();
    await t?.e.stop();
  });

  it("moves the stack from the file backend into PostgreSQL; the up afterwards restarts nothing", async () => {
    const fileBackend = a.env["PULUMI_BACKEND_URL"] ?? "";
    const first = await a.pulumi(["up", "--yes", "--skip-preview"]).done;
    expect(first.code, first.all).toBe(0);
    const before = starts();
    expect(before.map((s) => s.length)).toEqual([1, 1]);
    const moved = await moveToPostgres(a, "sim", t.pg, join(t.base, "sim-state.json"));
    t.keep("a-move", moved.map((r) => r.all).join("\n"));
    for (const r of moved) expect(r.code, r.all).toBe(0);
    // The old copy is gone from the file backend: nobody can apply it again.
    const left = await a.pulumi(["stack", "ls", "--json"], { PULUMI_BACKEND_URL: fileBackend }).done;
    expect(JSON.parse(left.stdout)).toEqual([]);
    // The nodes still record the stack with its old backend: a plain up says so and touches nothing.
    const plain = await a.pulumi(["up", "--yes", "--skip-preview"]).done;
    t.keep("a-plain-up-after-move", plain.all);
    expect(plain.code).not.toBe(0);
    const pgIdentity = t.pg.url.replace("pulumi@", "");
    nodes.forEach((n, i) => {
      const records = `the node records ${TEAM[i]?.name} for backend ${fileBackend}; this up records ${pgIdentity}`;
      const move =
        `if stack sim moved to this backend from ${fileBackend} (pulumi stack export / import), ` +
        `record the move once with SM121_ALLOW_TAKEOVER=${n.name}: nothing restarts`;
      expect(plain.all).toContain(`${n.name}: ${records}: ${n.name}: ${move}`);
    });
    // The one up that records the move restarts nothing; the next one has nothing to do.
    const move = await recordMove(a, nodes).done;
    t.keep("a-move-up", move.all);
    expect(move.code, move.all).toBe(0);
    expect(starts()).toEqual(before);
    nodes.forEach((n, i) => {
      expect(ownerRecord(n, TEAM[i]?.name ?? "")).toEqual({ project: "sm121", stack: "sim", backend: pgIdentity });
      expect(existsSync(join(n.home, ".sm121", "deployments", TEAM[i]?.name ?? "", "taken-from.json"))).toBe(false);
    });
    const up = await a.pulumi(["up", "--yes", "--skip-preview"]).done;
    t.keep("a-first-up-on-postgres", up.all);
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(/Resources:\n {4}\d+ unchanged\n/);
    expect(starts()).toEqual(before);
    const row = t.pg.sql("SELECT key FROM pulumi_state WHERE key LIKE '%/.pulumi/stacks/sm121/sim.json';");
    expect(row.trim()).toMatch(/\/\.pulumi\/stacks\/sm121\/sim\.json$/);
  });

  it("a CI runner at another path, with its own home and known_hosts, previews the same stack: no change", async () => {
    b = runnerB(t);
    const preview = await b.ciDeploy(["auto", "--stack", "sim"], { GITHUB_EVENT_NAME: "pull_request" }).done;
    t.keep("b-preview", preview.all);
    expect(preview.code, preview.all).toBe(0);
    const added = `ci-deploy: ~/.ssh/known_hosts: ${nodes.length} node key(s) added from SM121_KNOWN_HOSTS`;
    expect(preview.stdout).toContain(added);
    expect(preview.stdout).toMatch(/ci-deploy: pulumi preview: nothing to do \(\d+ unchanged\)/);
    expect(preview.all).not.toMatch(/drift|unreachable/);
  });

  it("A and B up at once with different changes: one serves, the other is refused naming it", async () => {
    // Whichever wins holds the stack's lock in its engines' before_serve hook until the other
    // has been answered.
    a.setMaxLen(16384, true);
    b.setMaxLen(12288, true);
    setGates(nodes, false);
    const runs = { A: a.pulumi(["up", "--yes", "--skip-preview"]), B: b.ciDeploy(["up", "--stack", "sim"]) };
    await Promise.race([runs.A.done, runs.B.done]);
    setGates(nodes, true);
    const [ra, rb] = await Promise.all([runs.A.done, runs.B.done]);
    t.keep("race-a", ra.all);
    t.keep("race-b", rb.all);
    expect(
      [ra.code, rb.code].filter((c) => c === 0),
      `A:\n${ra.all}\nB:\n${rb.all}`,
    ).toHaveLength(1);
    const aWon = ra.code === 0;
    const [winner, loser, won, lost] = aWon ? (["A", "B", 16384, 12288] as const) : (["B", "A", 12288, 16384] as const);
    t.keep("race-winner", winner);
    const out = (loser === "A" ? ra : rb).all;
    const named = STACK_LOCKED.exec(out);
    expect(named, out).not.toBeNull();
    // The run it names is the winner's Pulumi CLI.
    const pid = Number(named?.[3]);
    expect([runs[winner].pulumiPids.has(pid), runs[loser].pulumiPids.has(pid)]).toEqual([true, false]);
    nodes.forEach((n, i) => {
      const d = TEAM[i]?.name ?? "";
      expect([startsAt(n, d, won), startsAt(n, d, lost)], engineStarts(n, d).join("\n")).toEqual([1, 0]);
    });
  });
});
