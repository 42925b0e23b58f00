/**
 * The decision rules of an up, pure (no node): what restarts, what only updates the state, when the
 * restarts a dead or hung engine causes stop (sm121:liveness), what a node the look could not see
 * changes (nothing), how the look's liveness check reads its record, and which gateway entries a
 * file keeps for a removed deployment.
 */
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decide as decided, heldWords, type EngineProps } from "../src/providers/engineDecide";
import { check, diff } from "../src/providers/engineImpl";
import { diff as gatewayDiff, listed } from "../src/providers/gatewayImpl";
import type { GatewayWire } from "../src/providers/wire";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { gatewayFile } from "../src/gateway/file.render";
import { sha256 } from "../src/render/identity";
import { renderSite } from "../src/render/deployment";
import type { DeploymentBundle } from "../src/render/types";
import { type NodeState } from "../src/serve/probe";
import { driftOf } from "../src/serve/drift";
import { liveCheckOf } from "../src/serve/liveness";
import { loadingOr } from "../src/serve/loading";
import type { StoredOutcome } from "../src/serve/outcome";
import { msg, say } from "../src/text/messages";
import type { RecordOf } from "../src/protocol";
import { CONNECTION, engineWire, NOTHING_ALLOWED } from "./helpers/wire";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const b = bundles.find((x) => x.deployment === "qwen3-32b-vllm-tp2") as DeploymentBundle;
const NOW = Date.parse("2026-12-01T12:00:00Z");
const ago = (s: number) => new Date(NOW - s * 1000).toISOString();
const allow = NOTHING_ALLOWED;
const serving: StoredOutcome = { status: "serving", nodes: [], warnings: [] };
const LIVENESS = { maxRestarts: 2, windowS: 3600 };
const node = "vllm-1";
/** The look's findings (serve/observe), and the words each says in English. */
const HUNG_FOUND = msg("serve.look.noToken", {
  node,
  timeoutS: 10,
  counters: msg("serve.look.countersStill", { before: 7 }),
});
const HUNG = "vllm-1: answers /v1/models but no token in 10 s and its request counters stood still (7)";

/** The decision, its messages said in English. */
const decide = (...a: Parameters<typeof decided>) => {
  const d = decided(...a);
  const touch = d.touch.map((x) => ({ ...x, words: say(x.words, "en") }));
  return { ...d, restart: d.restart.map((m) => say(m, "en")), touch };
};
const news = (over: Partial<EngineProps> = {}): EngineProps => {
  return { bundle: b, allow, drift: [], liveness: LIVENESS, ...over };
};
const olds = (outcome: StoredOutcome): Partial<EngineProps> => ({ bundle: b, allow, outcome });
const DEAD_FOUND = msg("serve.look.notRunning", { node, detail: "container exited" });
const DEAD = "vllm-1: the engine is not running (container exited)";
const hung = { drift: [HUNG_FOUND], health: [HUNG_FOUND] };

describe("what an up does with a deployment", () => {
  it("restarts for a hung engine, counts it, and forces the restart (the serve's probe sees it run)", () => {
    const d = decide(olds(serving), news(hung), NOW);
    expect(d).toMatchObject({ restart: [HUNG], health: [HUNG_FOUND], force: true });
    expect(say(HUNG_FOUND, "en")).toBe(HUNG);
    expect(say(DEAD_FOUND, "en")).toBe(DEAD);
    expect(d.held).toBeUndefined();
  });

  it("counts only the restarts within windowS", () => {
    const old = {
      ...serving,
      restarts: [
        { at: ago(7200), causes: [msg("state.recorded", { text: "x" })] },
        { at: ago(60), causes: [msg("state.recorded", { text: "y" })] },
      ],
    };
    expect(decide(olds(old), news(hung), NOW).restart).toEqual([HUNG]);
  });

  it("after maxRestarts within windowS: no restart, held (newly), with the count and the last causes", () => {
    const old = {
      ...serving,
      restarts: [
        { at: ago(600), causes: [DEAD_FOUND] },
        { at: ago(60), causes: [HUNG_FOUND] },
      ],
    };
    const d = decide(olds(old), news(hung), NOW);
    expect(d.restart).toEqual([]);
    expect(d.force).toBe(false);
    expect(d.held).toEqual({
      count: 2,
      windowS: 3600,
      maxRestarts: 2,
      causes: [DEAD_FOUND, HUNG_FOUND],
      now: [HUNG_FOUND],
      already: false,
    });
    expect(say(heldWords("pair", d.held ?? ({} as never)), "en")).toBe(
      [
        "deployment pair restarted 2 times in the last 3600 s for its health (sm121:liveness maxRestarts 2);",
        `the last causes: ${DEAD}; ${HUNG}; now ${HUNG}.`,
        "sm121 marks it failed and leaves it alone: find the cause (`sm121 logs pair`),",
        "then run `SM121_RESTART=1 pulumi up` to start it again",
      ].join(" "),
    );
  });

  it("leaves a held deployment alone (its failed status is none), until SM121_RESTART=1 or a new bundle", () => {
    const restarts = [{ at: ago(60), causes: [HUNG_FOUND] }];
    const held: StoredOutcome = { ...serving, status: "failed", held: true, restarts };
    const d = decide(olds(held), news(hung), NOW);
    expect(d.restart).toEqual([]);
    expect(d.held?.already).toBe(true);
    const retry = decide(olds(held), news({ ...hung, allow: { ...allow, restart: true } }), NOW);
    expect(retry).toMatchObject({ restart: ["SM121_RESTART=1", HUNG, "the last up left it failed"], force: true });
    const nodes = b.nodes.map((n) => ({ ...n, argv: [...n.argv, "--seed", "1"] }));
    const changed = { ...b, identity: "another", nodes };
    const restart = ["the rendered bundle changed (the launch on vllm-1, vllm-2)"];
    expect(decide(olds(held), news({ bundle: changed }), NOW).restart).toEqual(restart);
  });

  it("restarts for other drift whatever the bound (an edited file is the operator's act, not the engine's)", () => {
    const held: StoredOutcome = { ...serving, status: "failed", held: true };
    const changes = msg("serve.look.keyChanged", { key: "A", from: "1", to: "2" });
    const edited = msg("serve.look.envEdited", { node, changes });
    expect(decide(olds(held), news({ drift: [edited] }), NOW).restart).toEqual([
      "vllm-1: .env edited on the node: A 1 -> 2",
    ]);
  });

  it("finishes an up the operator interrupted instead of restarting what it started", () => {
    const failed: StoredOutcome = { ...serving, status: "failed" };
    expect(decide(olds(failed), news(), NOW)).toMatchObject({ restart: ["the last up left it failed"], force: true });
    const interrupted: StoredOutcome = { ...failed, interrupted: "readiness" };
    const d = decide(olds(interrupted), news(), NOW);
    expect(d).toMatchObject({ restart: [], force: false });
    // An update all the same: the serve's probe restarts only a node that does not run the bundle.
    expect(d.touch.map((t) => [t.kind, t.words])).toEqual([
      [
        "checks",
        "the last up was interrupted (Ctrl-C) at readiness: this one finishes it, " +
          "restarting only a node that does not run this bundle",
      ],
    ]);
  });

  it("records a node protected (or a gate changed) after it served: an update that restarts nothing", () => {
    const gate = b.nodes[0]?.memGateGiB ?? 0;
    const protect = (n: (typeof b.nodes)[number]) => ({ ...n, protected: true, memGateGiB: gate + 1 });
    const now = { ...b, nodes: b.nodes.map((n, i) => (i === 0 ? protect(n) : n)) };
    const d = decide(olds(serving), news({ bundle: now }), NOW);
    expect(d.restart).toEqual([]);
    expect(d.touch.map((t) => [t.kind, t.words])).toEqual([
      ["setting", "vllm-1: protected false -> true (recorded; nothing restarts for it)"],
      ["setting", `vllm-1: memory gate ${gate} -> ${gate + 1} GiB (recorded; nothing restarts for it)`],
    ]);
  });
});

describe("a change of shape on a protected node", () => {
  it("is refused by check, before anything is touched; diff only says the replacement", async () => {
    const stored = { ...engineWire(b), outcome: serving };
    const guarded = { ...b, nodes: [...b.nodes].reverse().map((n) => ({ ...n, protected: true })) };
    const seen = await check(stored, engineWire(guarded));
    const reasons = (seen.failures ?? []).map((f) => f.reason);
    expect(reasons.every((r) => r.includes("would restart"))).toBe(true);
    expect(reasons.length).toBe(2);
    expect(await diff("id", stored, engineWire(guarded))).toMatchObject({ changes: true, replaces: ["plan"] });
  });
});

describe("a deployment the look could not see", () => {
  const wire = engineWire;
  const guardedNodes = b.nodes.map((n) => ({ ...n, protected: true, env: { ...n.env, X: "1" } }));
  const guarded = { ...b, identity: "new", nodes: guardedNodes };
  const unknown = [
    msg("serve.unseen", { place: "Pulumi.s.yaml:14:7: sm121:nodes.vllm-1.ssh", node: "vllm-1", first: "timed out" }),
  ];

  it("is refused nothing and changes nothing, where the same change on a reachable node is refused", async () => {
    const stored = { ...wire(b), outcome: serving };
    const seen = await check(stored, wire(guarded));
    const refusal = (n: string) =>
      `node ${n} is protected and this run would restart qwen3-32b-vllm-tp2 on it; ` +
      `run with SM121_ALLOW_PROTECTED=${n} to allow it`;
    expect(seen.failures?.map((f) => f.reason)).toEqual(["vllm-1", "vllm-2"].map(refusal));
    expect((await check(stored, wire(guarded, { unknown }))).failures ?? []).toEqual([]);
    expect(await diff("id", stored, wire(guarded, { unknown }))).toEqual({ changes: false });
  });
});

const b64 = (s: string) => Buffer.from(s).toString("base64");
/** The lines of /metrics that name the counters, as the node sends them: `n` requests done. */
const counters = (n: number) =>
  b64(`# TYPE vllm:request_success_total counter\nvllm:request_success_total{finished_reason="stop"} ${n}.0\n`);

describe("the look's liveness record and the drift it makes", () => {
  it("reads a token, a busy engine, a hung one, and one that refused the completion", () => {
    const live = (r: Partial<RecordOf<"live">>) => liveCheckOf([{ kind: "live", modelsCode: 200, ...r }], 10);
    expect(live({ completionCode: 200, ms: 35, before64: counters(4), after64: null })).toMatchObject({
      verdict: "ok",
      ms: 35,
    });
    expect(live({ completionCode: 0, ms: 10000, before64: counters(4), after64: counters(9) })?.verdict).toBe("busy");
    expect(live({ completionCode: 0, ms: 10000, before64: counters(4), after64: counters(4) })?.verdict).toBe("hung");
    expect(live({ completionCode: 0, ms: 10000, before64: null, after64: null })?.verdict).toBe("hung");
    expect(live({ modelsCode: 0 })?.verdict).toBe("hung");
    expect(live({ completionCode: 401, ms: 3, before64: counters(1), after64: counters(1) })?.verdict).toBe("refused");
  });

  it("reads /metrics as Prometheus does: an aborted request is no progress; NaN or ±Inf counters are unknown", () => {
    const live = (before: string, after: string) =>
      liveCheckOf(
        [{ kind: "live", modelsCode: 200, completionCode: 0, ms: 10000, before64: b64(before), after64: b64(after) }],
        10,
      );
    const ok = 'vllm:request_success_total{finished_reason="stop"} 3';
    const abort = 'vllm:request_success_total{finished_reason="abort"}';
    expect(live(`${ok}\n${abort} 1`, `${ok}\n${abort} 2.0e0`)).toMatchObject({
      verdict: "hung",
      progress: { before: 3, after: 3 },
    });
    const nan = `${ok}\nvllm:generation_tokens_total{model_name="m"} NaN`;
    const inf = `${ok}\nvllm:generation_tokens_total{model_name="m"} +Inf`;
    // Unknown counters tell nothing: no token in time is a hang, and the look itself holds.
    expect(live(nan, inf)).toMatchObject({ verdict: "hung", progress: null });
    expect(live(`${ok}\n`, "not an exposition {")).toMatchObject({ verdict: "hung", progress: null });
  });

  it("takes an engine that answers nothing yet within its readiness wait for a load, not a hang", () => {
    const silent = liveCheckOf([{ kind: "live", modelsCode: 0 }], 10);
    if (silent === undefined) throw new Error("no check");
    expect(loadingOr(silent, ago(60), 1800, undefined, NOW).verdict).toBe("loading");
    expect(loadingOr(silent, ago(2000), 1800, undefined, NOW).verdict).toBe("hung");
    expect(loadingOr(silent, undefined, 1800, undefined, NOW).verdict).toBe("hung");
    // One the last up found ready since it started has loaded: silent now, it hangs (a SIGSTOP).
    const second = (ms: number) => new Date(NOW - ms).toISOString().replace(/\.\d+Z$/, "Z");
    expect(loadingOr(silent, ago(60), 1800, second(50_000), NOW).verdict).toBe("hung");
    // A ready time from before this start (the engine started again since) is a load's.
    expect(loadingOr(silent, ago(60), 1800, second(70_000), NOW).verdict).toBe("loading");
    // One that answers /v1/models and gives no token hangs, however new.
    const noToken = liveCheckOf(
      [{ kind: "live", modelsCode: 200, completionCode: 0, before64: counters(1), after64: counters(1) }],
      10,
    );
    if (noToken === undefined) throw new Error("no check");
    expect(loadingOr(noToken, ago(60), 1800, undefined, NOW).verdict).toBe("hung");
  });

  it("is drift (health) only on an engine that runs this bundle and hangs", () => {
    const nb = b.nodes[0];
    if (nb === undefined) throw new Error("no node");
    const [before64, after64] = [counters(7), counters(7)];
    const record = { kind: "live" as const, modelsCode: 200, completionCode: 0, ms: 10000, before64, after64 };
    const hangs = liveCheckOf([record], 10);
    if (hangs === undefined) throw new Error("no check");
    const recorded = { identity: nb.identity, files: {} };
    const st: NodeState = { failed: [], running: true, others: [], holders: [], files: {}, recorded, live: hangs };
    const found = driftOf(nb, st);
    expect(found.map((d) => [d.kind, d.files, say(d.said, "en")])).toEqual([
      ["hung", [], `${nb.node}: answers /v1/models but no token in 10 s and its request counters stood still (7)`],
    ]);
    expect(driftOf(nb, { ...st, recorded: { identity: "older", files: {} } })).toEqual([]);
  });
});

describe("the gateway file's entries", () => {
  const model = (deployment: string, node: string) => ({
    deployment,
    model: deployment,
    status: "serving",
    endpoints: [{ node, url: "http://203.0.113.9:8000", reachable: true }],
  });
  const wire = (models: ReturnType<typeof model>[], lingering: string[], found?: string): GatewayWire => ({
    path: "~/gw.yaml",
    format: "litellm",
    endpoints: "",
    connection: CONNECTION,
    __file: { models, apiKey: false, lingering, served: [], ...(found !== undefined && { found }) },
    stateVersion: STATE_VERSIONS.GatewayFragment,
  });

  it("keeps a removed deployment, disabled, while the look still finds it on a node, and drops it after", () => {
    const before = wire([model("a", "n1"), model("b", "n2")], []);
    const both = listed(wire([model("a", "n1")], ["b"]), before);
    expect(both.map((m) => [m.deployment, m.status])).toEqual([
      ["a", "serving"],
      ["b", "removed"],
    ]);
    expect(listed(wire([model("a", "n1")], []), before).map((m) => m.deployment)).toEqual(["a"]);
  });

  it("is written again when the look found it edited or gone on its node", async () => {
    const text = gatewayFile("litellm", [model("a", "n1")], { apiKey: false }).text;
    const stored = { ...wire([model("a", "n1")], []), sha256: sha256(text) };
    expect(await gatewayDiff("id", stored, wire([model("a", "n1")], [], sha256(text)))).toEqual({ changes: false });
    const edited = sha256(`${text}# edit\n`);
    expect(await gatewayDiff("id", stored, wire([model("a", "n1")], [], edited))).toEqual({ changes: true });
    expect(await gatewayDiff("id", stored, wire([model("a", "n1")], [], ""))).toEqual({ changes: true });
  });
});
