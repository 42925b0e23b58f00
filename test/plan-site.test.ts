/**
 * planSite as a pure function, over the looks recorded on the simulated site (test/fixtures/looks/,
 * recorded by test/e2e/looks.test.ts): each refusal, each line and each decision of the plan, from the
 * project, the look and the run's inputs alone: no node, no Pulumi, no environment.
 */
import { describe, expect, it } from "vitest";
import { planSite } from "../src/plan/site";
import type { Planned, SitePlan } from "../src/plan/types";
import { recorded, runOf, type ScenarioName } from "./helpers/looks";
import type { RunInputs } from "../src/plan/inputs";

const nothing = { protected: [], experimental: false, restart: false, takeover: [] };

function planned(name: ScenarioName, o: Partial<RunInputs> = {}): Planned {
  const { project, look } = recorded(name);
  return planSite(project, look, runOf(name, o));
}

function planOf(name: ScenarioName, o: Partial<RunInputs> = {}): { plan: SitePlan; lines: string[] } {
  const p = planned(name, o);
  if ("refused" in p) throw new Error(`${name} was refused:\n${p.refused}`);
  return { plan: p.plan, lines: p.lines.map((l) => `[${l.level}] ${l.text}`) };
}

function refusalOf(name: ScenarioName, o: Partial<RunInputs> = {}): string {
  const p = planned(name, o);
  if (!("refused" in p)) throw new Error(`${name} was planned, not refused`);
  return p.refused;
}

describe("planSite over the stack as it serves", () => {
  it("plans each deployment after the one before in its set, the protected last; says the fit, passive look", () => {
    const { plan, lines } = planOf("steady");
    expect(plan.deployments.map((d) => [d.bundle.deployment, d.after])).toEqual([
      ["roll-1", []],
      ["roll-2", ["roll-1"]],
      ["solo", ["roll-1", "roll-2"]],
    ]);
    expect(plan.deployments.map((d) => d.replica && [d.replica.index, d.replica.of, d.replica.after])).toEqual([
      [1, 2, undefined],
      [2, 2, "roll-1"],
      undefined,
    ]);
    expect(plan.served).toEqual(["roll-1", "roll-2", "solo"]);
    // Found running as declared: the fit's one line, no tables, no roll line; and the protected n4's
    // engine checked without a request (its log's age is the recording's).
    expect(lines).toEqual([
      expect.stringMatching(
        new RegExp(
          "^\\[info\\] n4: protected, so checked passively, without an HTTP request " +
            "\\(SM121_ALLOW_PROTECTED=n4 allows one\\): the engine's processes run \\(states S\\), " +
            "its log last written \\d+ s ago$",
        ),
      ),
      "[info] memory fit: roll-1, roll-2, solo run as declared on their nodes (sm121 doctor shows their fit)",
    ]);
    expect(plan.deployments.every((d) => d.found.drift.length === 0 && d.found.health.length === 0)).toBe(true);
    expect(plan.unknown).toEqual([]);
    expect(plan.gateway?.models.map((m) => [m.deployment, m.model, m.status])).toEqual([
      ["roll-1", "roll-model", "serving"],
      ["roll-2", "roll-model", "serving"],
      ["solo", "solo", "serving"],
    ]);
    expect(plan.gateway?.lingering).toEqual([]);
    expect(plan.scrape?.path).toBe("~/prometheus/sm121.json");
  });

  it("surges the set onto its spare first when it restarts: the spare's fit and the surge in words", () => {
    const { plan, lines } = planOf("steady", { allow: { ...nothing, restart: true } });
    expect(plan.surges).toHaveLength(1);
    const [s] = plan.surges;
    expect(s?.verdict).toEqual({ go: true });
    expect(s?.set.members).toEqual(["roll-1", "roll-2"]);
    expect(s?.set.surge).toBe("roll-spare");
    expect(s?.bundle.nodes.map((n) => n.node)).toEqual(["n3"]);
    expect(s?.model).toMatchObject({ deployment: "roll-spare", model: "roll-model" });
    expect(plan.deployments.map((d) => d.replica?.surge)).toEqual(["roll-spare", "roll-spare", undefined]);
    const roll = lines.find((l) => l.includes("surges roll-model"));
    expect(roll).toContain("memory fit of roll-spare");
    expect(roll).toContain(
      "surges roll-model onto n3 first: roll-spare starts the new recipe there and answers, then roll-1, then roll-2",
    );
    // Restarted: each deployment's fit is said again.
    expect(lines.some((l) => l.startsWith("[warn] memory fit of roll-1 is unknown"))).toBe(true);
  });

  it("rolls every replica at once with SM121_ROLL=all, and says why there is no surge", () => {
    const { plan, lines } = planOf("steady", { allow: { ...nothing, restart: true }, rollAll: true });
    const [s] = plan.surges;
    expect(s?.verdict.go).toBe(false);
    expect(s?.set.surge).toBeUndefined();
    expect(plan.deployments.map((d) => d.after)).toEqual([[], [], ["roll-1", "roll-2"]]);
    expect(lines.join("\n")).not.toContain("surges roll-model onto n3 first");
  });

  it("is pure: the same plan twice, and the look as it was", () => {
    const { project, look } = recorded("steady");
    const before = JSON.stringify(look);
    const run = runOf("steady", { allow: { ...nothing, restart: true } });
    const a = planSite(project, look, run);
    const b = planSite(project, look, run);
    expect(JSON.stringify(a)).toBe(JSON.stringify(b));
    expect(JSON.stringify(look)).toBe(before);
  });
});

describe("planSite's refusals, before any node is touched", () => {
  it("refuses to stop a deployment on a protected node it leaves, unless SM121_ALLOW_PROTECTED names the node", () => {
    expect(refusalOf("gone")).toBe(
      "node n4 is protected and this run would stop deployment solo on it (the site no longer puts it there); " +
        "run with SM121_ALLOW_PROTECTED=n4 to allow it",
    );
    const { plan, lines } = planOf("gone", { allow: { ...nothing, protected: ["n4"] } });
    expect(lines).toContain("[info] n4: deployment solo is no longer declared there; this up stops it");
    expect(plan.served).toEqual(["roll-1", "roll-2"]);
    // Kept in the gateway file, disabled, until its node no longer holds it.
    expect(plan.gateway?.lingering).toEqual(["solo"]);
  });

  it("says what a node moving to another deployment stops first", () => {
    const { plan, lines } = planOf("moved", { allow: { ...nothing, protected: ["n4"] } });
    expect(lines[0]).toBe("[info] n4: stops deployment solo first (the node now serves chat)");
    expect(plan.deployments.find((d) => d.bundle.deployment === "chat")?.found.drift).not.toEqual([]);
  });

  it("refuses another stack's deployment, unless SM121_ALLOW_TAKEOVER names the node", () => {
    const refused = refusalOf("foreign");
    expect(refused).toMatch(
      /^n1: deployment roll-1 of stack sim \(project sm121\) runs there, and this run would stop/,
    );
    expect(refused).toContain("SM121_ALLOW_TAKEOVER=n1");
    expect("plan" in planned("foreign", { allow: { ...nothing, takeover: ["n1"] } })).toBe(true);
  });

  it("refuses what an engine would refuse at start, naming the deployment, the node and the file", () => {
    const refused = refusalOf("fatal");
    expect(refused.split("\n")).toEqual([
      "sm121: the engines would refuse to start (nothing was stopped):",
      expect.stringMatching(/^ {2}broken: n5: missing \/nonexistent\/vllm\.yaml \(--config .* recipes\/broken\.toml/),
    ]);
  });

  it("refuses a deployment and a node that cannot fit, after the fit's tables, unless SM121_ALLOW_UNFIT allows", () => {
    const p = planned("unfit");
    if (!("refused" in p)) throw new Error("unfit was planned");
    const refusals = p.refused.split("\n");
    expect(refusals).toHaveLength(2);
    expect(refusals[0]).toMatch(/^deployment huge cannot fit in memory \(Qwen\/Qwen3-8B\): n5: weights 372\.5 GiB/);
    expect(refusals[1]).toMatch(/^node n3 is over-committed: half claims 77\.0 GiB .* SM121_ALLOW_UNFIT=n3 lets/);
    expect(p.lines.map((l) => l.text).join("\n")).toContain("n3    121.7 GiB  half 77.0 GiB + half2 77.0 GiB");
    // Allowing one node is not enough.
    expect(refusalOf("unfit", { unfit: ["n5"] })).toMatch(/^node n3 is over-committed/);
    const { plan, lines } = planOf("unfit", { unfit: ["n3", "n5"], allow: { ...nothing, restart: true } });
    expect(lines.filter((l) => l.startsWith("[warn] ") && l.includes("SM121_ALLOW_UNFIT"))).toHaveLength(2);
    // half and half2 are declared on the spare: the set rolls without a surge, and the plan says why.
    const [s] = plan.surges;
    expect(s?.verdict.go).toBe(false);
    expect(s?.verdict.go === false && s.verdict.why.key).toBe("surge.whyBusy");
    expect(s?.words).toMatch(/n3/);
  });

  it("refuses a deployment whose image differs between its nodes, naming each node's image ID", () => {
    const refused = refusalOf("images").split("\n");
    expect(refused[0]).toBe("sm121: the fabric refuses this run (nothing was stopped):");
    expect(refused[1]).toMatch(/^ {2}pair: the image nvcr\.io\/nvidia\/vllm:26\.01-py3 differs between its nodes: /);
    const ids = [...(refused[1] ?? "").matchAll(/(n[35]) (sha256:[0-9a-f]{12})/g)].map((m) => [m[1], m[2]]);
    expect(ids.map(([n]) => n)).toEqual(["n5", "n3"]);
    expect(ids[0]?.[1]).not.toBe(ids[1]?.[1]);
  });
});

describe("planSite over a site with faults", () => {
  it("leaves a deployment it could not see as it is, serves it last and says why; warns of an unused node down", () => {
    const { plan, lines } = planOf("faults");
    expect(lines[0]).toMatch(/^\[warn\] Pulumi\.faults\.yaml:28:7: sm121:nodes\.n5\.ssh: n5 unreachable: /);
    expect(plan.deployments.map((d) => d.bundle.deployment)).toEqual(["roll-1", "solo", "roll-2"]);
    expect(plan.deployments.find((d) => d.bundle.deployment === "roll-2")?.found.unknown).toHaveLength(1);
    expect(plan.unknown).toHaveLength(1);
    expect(plan.unknown[0]).toMatch(
      /^deployment roll-2 is unknown: its nodes could not be looked at; this plan leaves/,
    );
    expect(plan.unknown[0]).toContain("when n2 can be reached again, run sm121 up");
    // An up fails for it once the others have gone on.
    expect(planOf("faults", { dryRun: false }).plan.unknown[0]).not.toBe(plan.unknown[0]);
    // solo's engine is gone: its drift and its health say so, and its fit is said again.
    const solo = plan.deployments.find((d) => d.bundle.deployment === "solo");
    expect(solo?.found.health.map((m) => m.key)).toEqual(["serve.look.notRunning"]);
    expect(lines.some((l) => l.startsWith("[warn] memory fit of solo is unknown"))).toBe(true);
  });
});
