/**
 * Surges (issue 31): the site's `spare:` (checked at its line, with the fix), the plan's decision
 * from what the look saw on the spare (busy, protected, unreachable, the memory fit), its words,
 * the surge's entry added to each gateway format as it is on disk, and the drain's reading of an
 * engine's gauge of running requests.
 */
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { loadRecipes } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { gatewayFile, type GatewayModel } from "../src/gateway/file.render";
import { addEndpoints } from "../src/gateway/surge.render";
import { fitOf } from "../src/render/memfit";
import { replicaPlaces, replicaSets } from "../src/render/replicas";
import { surgeVerdict, surgeWords, type SpareLook } from "../src/render/surge";
import { inflightOf } from "../src/serve/drain";
import { create, diff, update } from "../src/providers/surgeImpl";
import { rollLines, surgePlans } from "../src/plan/surge";
import { rollStepOf } from "../src/gateway/roll.render";
import type { SiteObservation } from "../src/serve/observe";
import type { SurgeWire } from "../src/providers/wire";
import { errorsOf } from "./helpers/spec";
import { msg, say, useLocale } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const F = "Pulumi.s.yaml";
/** Four local nodes on lines 3-6 (d protected); the deployments start on line 8. */
const NODES = [
  "config:",
  "  sm121:nodes:",
  "    a: { host: local, ip: 203.0.113.1 }",
  "    b: { host: local, ip: 203.0.113.2 }",
  "    c: { host: local, ip: 203.0.113.3 }",
  "    d: { host: local, ip: 203.0.113.4, protected: true }",
  "  sm121:deployments:",
  "",
].join("\n");
const site = (deployments: string) => parseSite(F, "s", NODES + deployments);
const bad = (deployments: string) => errorsOf(() => site(deployments));
const recipes = loadRecipes(join(ROOT, "recipes"), "recipes");

describe("the site's spare:", () => {
  it("declares the surge's deployment on the spare's nodes, named <entry>-spare", () => {
    const s = site("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], spare: [c] }\n");
    const spares = s.spares.map((x) => [x.of, x.nodes, x.deployment.name, x.deployment.nodes]);
    expect(spares).toEqual([["q8", ["c"], "q8-spare", ["c"]]]);
    expect(s.deployments.map((d) => d.name)).toEqual(["q8-1", "q8-2"]);
    expect(s.drainS).toBe(30);
  });

  it("refuses a spare node that a replica uses, at the node's place, with the fix", () => {
    expect(bad("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], spare: [b] }\n")).toEqual([
      `${F}:8:72: sm121:deployments[0].spare[0]: node "b" is in replica 2 of q8 and in its spare group; ` +
        "name a node that no replica of q8 uses: the spare starts the new recipe while every replica still serves",
    ]);
  });

  it("refuses a spare without replicas:, an unknown node, and a group of another size", () => {
    expect(bad("    - { name: q8, recipe: qwen3-8b-solo, nodes: [a], spare: [c] }\n")[0]).toContain(
      "sm121:deployments[0].spare: spare: needs replicas: on the same entry",
    );
    expect(bad("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], spare: [z] }\n")[0]).toContain(
      'sm121:deployments[0].spare[0]: node "z" is not in sm121:nodes; add it to sm121:nodes or use one of a, b, c, d',
    );
    expect(bad("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], spare: [c, d] }\n")).toEqual([
      `${F}:8:64: sm121:deployments[0].spare: the spare group has 2 node(s) and each replica of q8 has 1; ` +
        "name 1 node(s) in spare: the new recipe starts there as it does on a replica",
    ]);
  });
});

describe("the plan's surge", () => {
  const s = site("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], spare: [c] }\n");
  const bundles = renderSite(s, recipes, { root: ROOT });
  const [surge] = renderSite({ ...s, deployments: s.spares.map((x) => x.deployment) }, recipes, { root: ROOT });
  const [set] = replicaSets(s, bundles, false);
  const spare = s.spares[0];
  if (surge === undefined || set === undefined || spare === undefined) throw new Error("no set, spare or surge");
  const fits = fitOf(surge, recipes.get(surge.recipe), {});
  const look = (o: Partial<SpareLook> = {}): SpareLook => ({
    spare,
    bundle: surge,
    protectedNodes: [],
    busy: [],
    unreachable: [],
    fatal: [],
    fit: fits,
    ...o,
  });

  it("surges when the spare is free and the recipe fits there, and says so", () => {
    const v = surgeVerdict(set, look());
    expect(v).toEqual({ go: true });
    expect(surgeWords(set, spare, v)).toBe(
      "surges qwen3-8b onto c first: q8-spare starts the new recipe there and " +
        "answers, then q8-1, then q8-2, each stopped only once the one before it answers; q8-spare stops once q8-2 " +
        "answers; none of 2 down",
    );
  });

  it("surges only when a replica of the set rolls, so that the first up with a new spare says what it does", () => {
    // The look: what each node holds (a replica that runs there has its stop.sh: held).
    const seen = (held: string[]): SiteObservation => {
      const holders = Object.fromEntries(held.map((d, i) => [["a", "b"][i] ?? "", [{ deployment: d, held: true }]]));
      const empty = { drift: {}, health: {}, unknown: {}, unreachable: [], preflight: {}, leaving: [], moving: [] };
      return {
        ...empty,
        lingering: [],
        holders,
        models: {},
        steady: [],
        images: {},
        life: {},
        passive: [],
        unapplied: {},
      };
    };
    const plan = (held: string[], steady: string[]) =>
      surgePlans(s, [set], bundles, [surge], recipes, seen(held), new Set(steady))[0]?.verdict;
    // Both replicas run with an older recipe (a spare added with a recipe change): it surges.
    expect(plan(["q8-1", "q8-2"], [])).toEqual({ go: true });
    // The first up, where nothing of the set runs yet: no surge, and the plan says why.
    expect(plan([], [])).toEqual({ go: false, why: msg("surge.whyNoRoll") });
    // Every replica serves as declared: nothing rolls, nothing surges.
    expect(plan(["q8-1", "q8-2"], ["q8-1", "q8-2"])).toEqual({ go: false, why: msg("surge.whyNoRoll") });
  });

  it("is said where the run may restart a replica; a set serving as declared takes no line", () => {
    const v = surgeVerdict(set, look());
    const plan = { set, spare, bundle: surge, fit: fits, verdict: v, words: surgeWords(set, spare, v) };
    const said = rollLines([set], [plan], new Set(["q8-1"]));
    expect(said).toEqual([expect.stringMatching(/^memory fit of q8-spare: /), plan.words]);
    expect(rollLines([set], [plan], new Set(["q8-1", "q8-2"]))).toEqual([]);
    expect(rollLines([set], [], new Set())).toEqual(["rolls qwen3-8b: q8-1, then q8-2; at most 1 of 2 down"]);
    // Behind LiteLLM, a line of its own says how the replicas leave and what can still be cut.
    const places = replicaPlaces([set], bundles, 30, rollStepOf("litellm", recipes));
    expect(rollLines([set], [], new Set(), places)).toEqual([
      "rolls qwen3-8b: q8-1, then q8-2; at most 1 of 2 down",
      "litellm cannot be told to leave a replica out while it runs (it reads its file only at start); q8-1, q8-2 " +
        "abort what runs when they stop: each waits until none of its requests runs (up to 30 s), then stops, so a " +
        "request the gateway sends it in that last second is cut; vLLM's --shutdown-timeout makes an engine refuse " +
        "new requests at its stop instead",
    ]);
  });

  it("rolls one at a time when the spare is busy, protected, unreachable or too small, and says why", () => {
    const said = (o: Partial<SpareLook>) => {
      const v = surgeVerdict(set, look(o));
      return v.go ? "go" : surgeWords(set, spare, v);
    };
    const roll = `rolls ${set.model}: q8-1, then q8-2; at most 1 of 2 down; no surge onto c: `;
    const runs = (deployment: string) => msg("surge.busyRunning", { node: "c", deployment });
    expect(said({ busy: [runs("other")] })).toBe(`${roll}c is busy: c runs other`);
    expect(said({ busy: [runs("other"), runs("third")] })).toBe(`${roll}c is busy: c runs other; c runs third`);
    expect(said({ protectedNodes: ["c"] })).toBe(`${roll}c is protected`);
    const refused = msg("serve.unseen", { place: "Pulumi.s.yaml:9:7: sm121:nodes.c.ssh", node: "c", first: "refused" });
    const unreachable = said({ unreachable: [refused] });
    const seen = "Pulumi.s.yaml:9:7: sm121:nodes.c.ssh: c could not be looked at: refused";
    expect(unreachable).toBe(`${roll}the look could not reach it (${seen})`);
    const small = fitOf(surge, recipes.get(surge.recipe), { c: { memTotalBytes: 4 * 1024 ** 3, weightsBytes: 16e9 } });
    const tooSmall = said({ fit: small });
    expect(
      tooSmall.startsWith(`${roll}the new recipe does not fit there: deployment q8-spare cannot fit in memory`),
      tooSmall,
    ).toBe(true);
    // Said in Russian for the plan; the Surge resource keeps the same why in English, so the state does not move.
    useLocale("ru");
    try {
      const unfit = surgeVerdict(set, look({ fit: small }));
      expect(unfit.go ? "go" : say(unfit.why, "en")).toMatch(
        /^the new recipe does not fit there: deployment q8-spare cannot fit in memory \(/,
      );
      const plan = unfit.go ? "go" : surgeWords(set, spare, unfit);
      expect(plan).toMatch(/^поочерёдно перезапускает qwen3-8b: q8-1, затем q8-2; /);
      expect(plan).toContain("; surge на c не будет: новый рецепт там не помещается: ");
    } finally {
      useLocale("en");
    }
    const all = surgeVerdict({ ...set, roll: "all", allBecause: msg("roll.runAll") }, look());
    expect(all.go ? "go" : say(all.why, "en")).toBe("the set restarts all at once (SM121_ROLL=all)");
    expect(all.go ? "go" : say(all.why, "ru")).toBe("группа перезапускается целиком сразу (SM121_ROLL=all)");
  });
});

describe("the surge's entry in a gateway file as it is", () => {
  const model = (deployment: string, node: string, port: number): GatewayModel => ({
    deployment,
    model: "q",
    status: "serving",
    endpoints: [{ node, url: `http://203.0.113.9:${port}`, reachable: true }],
  });
  const replicas = [model("q-1", "a", 8001), model("q-2", "b", 8002)];
  const surge = model("q-spare", "c", 8003);

  it("adds it beside the replicas in each format, leaving the rest as it was", () => {
    const added = (format: "litellm" | "llama-swap" | "sm121") => {
      return addEndpoints(format, gatewayFile(format, replicas, { apiKey: false }).text, surge, { apiKey: false });
    };
    const lite = added("litellm");
    type Lite = { model_list: Array<{ model_info: { id: string } }>; router_settings: unknown };
    const l = parse(lite) as Lite;
    expect(l.model_list.map((m) => m.model_info.id)).toEqual(["q-1-a", "q-2-b", "q-spare-c"]);
    expect(l.router_settings).toBeDefined();
    const swap = added("llama-swap");
    expect(Object.keys((parse(swap) as { peers: object }).peers)).toEqual(["q-1-a", "q-2-b", "q-spare-c"]);
    const own = added("sm121");
    expect((JSON.parse(own) as { models: Array<{ deployment: string }> }).models.map((m) => m.deployment)).toEqual([
      "q-1",
      "q-2",
      "q-spare",
    ]);
  });
});

describe("the drain", () => {
  it("is for a replica that rolls on its own, by its engine's gauge, for sm121:drainS at most", () => {
    const s = site("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]] }\n");
    const bundles = renderSite(s, recipes, { root: ROOT });
    const drains = (runAll: boolean, drainS: number) => {
      return [...replicaPlaces(replicaSets(s, bundles, runAll), bundles, drainS).values()].map((p) => p.drain);
    };
    const drain = { path: "/metrics", running: "vllm:num_requests_running", boundS: 30 };
    expect(drains(false, 30)).toEqual([drain, drain]);
    // All at once: the gateway still sends them requests, nothing to wait for; 0 turns it off.
    expect(drains(true, 30)).toEqual([undefined, undefined]);
    expect(drains(false, 0)).toEqual([undefined, undefined]);
  });

  it("takes the gauge the node sent, and none when the engine exports none or it is no finite number", () => {
    const sent = (text: string | null) => [
      { kind: "inflight" as const, metrics64: text === null ? null : Buffer.from(text).toString("base64") },
    ];
    const running = "vllm:num_requests_running";
    expect(inflightOf(sent(`${running}{engine="0"} 2.0\n${running}{engine="1"} 1\n`), running)).toBe(3);
    expect(inflightOf(sent(null), running)).toBeUndefined();
    expect(inflightOf(sent(""), running)).toBeUndefined();
    expect(inflightOf(sent(`${running} +Inf\n`), running)).toBeUndefined();
  });
});

describe("the Surge resource's diff", () => {
  const wire = (set: Record<string, string>, go = true): SurgeWire => ({
    phase: "start",
    deployment: "q8-spare",
    nodes: ["c"],
    go,
    why: go ? "" : "c is protected",
    __set: set,
    secrets: {},
    connection: { knownHosts: "/dev/null", hostKeys: "strict" },
    __bundle: "",
    __run: { model: { deployment: "q8-spare", model: "q", status: "serving", endpoints: [] }, apiKey: false },
    stateVersion: STATE_VERSIONS.Surge,
  });

  it("changes when the plan surges in this run, or when the set's bundles change, and only then", async () => {
    const before = wire({ "q8-1": "a1", "q8-2": "b1" }, false);
    expect(await diff("q8-spare-start", before, wire({ "q8-1": "a1", "q8-2": "b1" }, false))).toEqual({
      changes: false,
    });
    // The plan surges (a replica rolls): the same set too, e.g. a replica that drifted.
    expect(await diff("q8-spare-start", before, wire({ "q8-1": "a1", "q8-2": "b1" }))).toEqual({ changes: true });
    // Without a surge the stored set follows, so that the state says what the set was.
    const without = wire({ "q8-1": "a2", "q8-2": "b1" }, false);
    expect(await diff("q8-spare-start", before, without)).toEqual({ changes: true });
  });

  it("starts and ends nothing in an update without a surge (one that only writes the state's version)", async () => {
    const now = wire({ "q8-1": "a1" }, false);
    const { stateVersion: _v, ...unversioned } = { ...now, started: { started: true } };
    expect(await diff("q8-spare-start", unversioned, now)).toEqual({ changes: true });
    const updated = await update("q8-spare-start", unversioned, now);
    expect(updated.outs).toMatchObject({ started: { started: true }, stateVersion: STATE_VERSIONS.Surge });
  });

  it("starts nothing at its creation when the plan does not surge (nothing of the set runs yet)", async () => {
    const made = await create(wire({ "q8-1": "a1" }, false));
    expect(made.outs).toMatchObject({ started: { started: false } });
  });
});
