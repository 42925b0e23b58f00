/**
 * Replica sets: the site's `replicas:` form (one deployment per node group, errors at their line),
 * the sets of deployments that serve one model name, their roll order (site order, protected nodes
 * last), and the plan's words for it.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes, parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { replicaPlaces, replicaSets, rollWords } from "../src/render/replicas";
import { errorsOf } from "./helpers/spec";
import { say } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const F = "Pulumi.s.yaml";
/** Three local nodes on lines 3-5 (c protected); the deployments start on line 7. */
const NODES = [
  "config:",
  "  sm121:nodes:",
  "    a: { host: local, ip: 203.0.113.1 }",
  "    b: { host: local, ip: 203.0.113.2 }",
  "    c: { host: local, ip: 203.0.113.3, protected: true }",
  "  sm121:deployments:",
  "",
].join("\n");
const site = (deployments: string) => parseSite(F, "s", NODES + deployments);
const bad = (deployments: string) => errorsOf(() => site(deployments));
const recipes = loadRecipes(join(ROOT, "recipes"), "recipes");
const OTHER = [
  'model = "Qwen/Qwen3-8B"',
  'served_model_name = "other"',
  'image = "nvcr.io/nvidia/vllm:26.01-py3"',
  "port = 8001",
  "",
].join("\n");
recipes.set("other", parseRecipe("recipes/other.toml", OTHER));
const sets = (deployments: string, runAll = false) => {
  const s = site(deployments);
  return replicaSets(s, renderSite(s, recipes, { root: ROOT }), runAll);
};

describe("the site's replicas: form", () => {
  it("renders one deployment per node group, named <name>-1, <name>-2, with its entry's roll", () => {
    const s = site("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], roll: all }\n");
    expect(s.deployments.map((d) => [d.name, d.nodes, d.replicaOf, d.roll])).toEqual([
      ["q8-1", ["a"], "q8", "all"],
      ["q8-2", ["b"], "q8", "all"],
    ]);
    expect(s.deployments[1]?.at).toEqual({ entry: ["deployments", 0], nodes: ["deployments", 0, "replicas", 1] });
  });

  it("refuses nodes and replicas together, and neither, at the entry's line", () => {
    expect(bad("    - { recipe: qwen3-8b-solo, nodes: [a], replicas: [[b]] }\n")).toEqual([
      `${F}:7:7: sm121:deployments[0]: a deployment has either nodes or replicas, not both; ` +
        "write nodes: [spark1] for one serving group, or replicas: [[spark1], [spark2]] for one per node group",
    ]);
    const missing = `${F}:7:7: sm121:deployments[0].nodes: is required; add it (array)`;
    expect(bad("    - { recipe: qwen3-8b-solo }\n")).toEqual([missing]);
  });

  it("refuses a node in two replicas, and an unknown one, at the node's own place", () => {
    expect(bad("    - { recipe: qwen3-8b-solo, replicas: [[a], [a, b], [z]] }\n")).toEqual([
      `${F}:7:49: sm121:deployments[0].replicas[1][0]: node "a" is in replicas 1 and 2 of qwen3-8b-solo; ` +
        "put each replica on nodes of its own: a replica that shares a node with another stops with it",
      `${F}:7:57: sm121:deployments[0].replicas[2][0]: node "z" is not in sm121:nodes; ` +
        "add it to sm121:nodes or use one of a, b, c",
    ]);
  });

  it("refuses a replica name that another deployment already uses", () => {
    const errors = bad(
      [
        "    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]] }",
        "    - { name: q8-2, recipe: qwen3-8b-solo, nodes: [c] }",
        "",
      ].join("\n"),
    );
    expect(errors).toEqual([
      `${F}:8:7: sm121:deployments[1]: deployment name "q8-2" is already used by deployments[0]; ` +
        "set name: on one of them to a distinct name",
    ]);
  });
});

describe("replica sets", () => {
  it("groups the deployments that serve one model name, protected nodes last, and says the roll", () => {
    const found = sets(
      [
        "    - { name: on-c, recipe: qwen3-8b-solo, nodes: [c] }",
        "    - { name: on-a, recipe: qwen3-8b-solo, nodes: [a] }",
        "    - { name: other, recipe: other, nodes: [b] }",
        "",
      ].join("\n"),
    );
    expect(found).toEqual([{ model: "qwen3-8b", members: ["on-a", "on-c"], roll: "one" }]);
    expect(found.map(rollWords)).toEqual(["rolls qwen3-8b: on-a, then on-c; at most 1 of 2 down"]);
    expect([...replicaPlaces(found, [], 0)]).toEqual([
      ["on-a", { model: "qwen3-8b", index: 1, of: 2, roll: "one" }],
      ["on-c", { model: "qwen3-8b", index: 2, of: 2, roll: "one", after: "on-a" }],
    ]);
  });

  it("restarts them all at once for SM121_ROLL=all or a roll: all entry, and says why", () => {
    const two = "    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]] }\n";
    const run = sets(two, true);
    const words = "restarts qwen3-8b all at once (SM121_ROLL=all): q8-1, q8-2; all 2 down together";
    expect(run.map(rollWords)).toEqual([words]);
    expect([...replicaPlaces(run, [], 0).values()].map((p) => p.after)).toEqual([undefined, undefined]);
    const entry = sets("    - { name: q8, recipe: qwen3-8b-solo, replicas: [[a], [b]], roll: all }\n");
    expect(entry.map((s) => (s.allBecause === undefined ? undefined : say(s.allBecause, "en")))).toEqual([
      "roll: all on q8-1, q8-2",
    ]);
  });

  it("has no set for a model served once", () => {
    expect(sets("    - { recipe: qwen3-8b-solo, nodes: [a] }\n")).toEqual([]);
  });
});
