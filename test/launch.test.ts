/**
 * Seed 001's .env identity for every target (render/launch): which bundle fields are launch fields
 * (a change restarts the engine) and which are not (the up checks the running engine); the same
 * rule for a bundle an older release stored (test/fixtures/legacy/bundle-qwen3-32b-vllm-tp2.json,
 * rendered by an earlier sm121 from the examples site) and for a node record without a launch
 * identity.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decide, type EngineProps } from "../src/providers/engineDecide";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { sha256 } from "../src/render/identity";
import { launchIdentityOf } from "../src/render/launch";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";
import { type NodeState } from "../src/serve/probe";
import { runsThisLaunch } from "../src/serve/drift";
import { say } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const pick = (name: string) => bundles.find((x) => x.deployment === name) as DeploymentBundle;
const tp2 = pick("qwen3-32b-vllm-tp2");
const flash = pick("qwen38-flash-best");
const tmux = pick("qwen3-30b-sglang-tmux");
const allow = { protected: [], experimental: false, restart: false };

/** The bundle with `edit` applied to every node, and a new identity (the render's diff key moved). */
function edited(b: DeploymentBundle, edit: (n: NodeBundle) => NodeBundle, readiness = b.readiness): DeploymentBundle {
  return { ...b, nodes: b.nodes.map(edit), readiness, identity: sha256(b.identity, "edited") };
}
const decided = (before: DeploymentBundle, after: DeploymentBundle) => {
  const news: EngineProps = { bundle: after, allow, drift: [] };
  const d = decide({ bundle: before, allow }, news);
  const checks = d.touch.filter((t) => t.kind === "checks").map((t) => say(t.words, "en"));
  return { restart: d.restart.map((m) => say(m, "en")), checks };
};
const withFile = (n: NodeBundle, path: string, content: string): NodeBundle => ({
  ...n,
  files: n.files.map((f) => (f.path === path ? { ...f, content, sha256: sha256(content) } : f)),
});

describe("launch fields: a change restarts the engine", () => {
  const restarts = (after: DeploymentBundle, before = tp2) =>
    expect(decided(before, after).restart[0]).toMatch(/^the rendered bundle changed \(the launch on /);
  it("the argv, the environment, the image", () => {
    restarts(edited(tp2, (n) => ({ ...n, argv: [...n.argv, "--max-num-seqs", "4"] })));
    restarts(edited(tp2, (n) => ({ ...n, env: { ...n.env, VLLM_X: "1" } })));
    restarts(edited(tp2, (n) => ({ ...n, image: "nvcr.io/nvidia/vllm:26.02-py3" })));
  });
  it("a container's mounts and RDMA access", () => {
    restarts(edited(tp2, (n) => ({ ...n, container: { mounts: ["/data:/data"] } })));
    const access = { privileged: false, devices: ["/dev/infiniband"], capAdd: ["IPC_LOCK"], ulimits: ["memlock=-1"] };
    restarts(edited(tp2, (n) => ({ ...n, container: { mounts: n.container?.mounts ?? [], access } })));
  });
  it("a file the engine reads: the script recipe's .env (start.sh reads it)", () => {
    const env = flash.nodes[0]?.files.find((f) => f.path.endsWith("/.env"))?.path ?? "";
    restarts(
      edited(flash, (n) => withFile(n, env, 'MAX_NUM_SEQS="8"\n')),
      flash,
    );
  });
});

describe("not launch fields: the up checks the running engine, and says what changed", () => {
  it("the proofs and the readiness wait (readyGraceS 300 -> 301)", () => {
    const proofs = edited(tp2, (n) => n, { ...tp2.readiness, proofs: ["MTP draft head engaged"] });
    expect(decided(tp2, proofs)).toEqual({ restart: [], checks: ["checks, does not restart: the proofs"] });
    const grace = edited(tp2, (n) => n, { ...tp2.readiness, timeoutS: tp2.readiness.timeoutS + 1, graceS: 301 });
    expect(decided(tp2, grace)).toEqual({ restart: [], checks: ["checks, does not restart: the readiness wait"] });
  });
  it("sm121's own scripts and files: the start script, run.sh under the deployment's state directory", () => {
    const run = tmux.nodes[0]?.files.find((f) => f.path.endsWith("/run.sh"))?.path ?? "";
    const start = (n: NodeBundle) => ({ ...n, start: `${n.start}\n: rewritten by a newer sm121` });
    const after = edited(tmux, (n) => withFile(start(n), run, "#!/bin/bash\nexec true\n"));
    const checks = ["checks, does not restart: sm121's start and stop scripts, sm121's own files"];
    expect(decided(tmux, after)).toEqual({ restart: [], checks });
  });
});

describe("a bundle an older sm121 stored", () => {
  const fixture = join(__dirname, "fixtures", "legacy", "bundle-qwen3-32b-vllm-tp2.json");
  const old = JSON.parse(readFileSync(fixture, "utf8")) as DeploymentBundle[];
  const stored = old[0] as DeploymentBundle;
  // That render names solo-1's HF cache by its absolute path (its release required it); tp2 is the same site otherwise.
  it("compares by the same rule: its launch is this one, its other fields changed", () => {
    expect(stored.nodes[0]?.container).toBeUndefined();
    expect(stored.identity).not.toBe(tp2.identity);
    // This sm121 reads vLLM's KV cache line of any device (a CPU's too), and puts the memory tripwire beside
    // the engine: checks, no restart.
    const what = "the readiness wait, the KV cache line, sm121's start and stop scripts, sm121's own files";
    const checks = [`checks, does not restart: ${what}`];
    expect(decided(stored, tp2)).toEqual({ restart: [], checks });
  });
  it("kept no image on a node before the plan (9492e6f): the container's label compares it", () => {
    const imageless = { ...stored, nodes: stored.nodes.map(({ image: _image, ...n }) => n) };
    expect(decided(imageless, tp2).restart).toEqual([]);
    const another = edited(tp2, (n) => ({ ...n, image: "nvcr.io/nvidia/vllm:26.02-py3" }));
    expect(decided(imageless, another).restart).toEqual(["the rendered bundle changed (the launch on vllm-1, vllm-2)"]);
  });
  it("restarts when the launch differs from what it stored", () => {
    const more = (n: NodeBundle) => [...(n.container?.mounts ?? []), "/data:/data"];
    const mounts = edited(tp2, (n) => ({ ...n, container: { mounts: more(n) } }));
    expect(decided(stored, mounts).restart).toEqual(["the rendered bundle changed (the launch on vllm-1, vllm-2)"]);
  });
  it("and on the node: a record without a launch identity runs this launch when it is the stored bundle's", () => {
    const nb = tp2.nodes[0] as NodeBundle;
    const before = stored.nodes[0] as NodeBundle;
    const st = (recorded: NodeState["recorded"]): NodeState => ({
      failed: [],
      running: true,
      startedAt: new Date().toISOString(),
      files: {},
      others: [],
      holders: [],
      ...(recorded !== undefined && { recorded }),
    });
    expect(runsThisLaunch(nb, st({ identity: before.identity, files: {} }), before)).toBe(true);
    expect(runsThisLaunch(nb, st({ identity: "another", files: {} }), before)).toBe(false);
    expect(runsThisLaunch(nb, st({ identity: before.identity, files: {} }))).toBe(false);
    expect(runsThisLaunch(nb, st({ identity: "x", launch: launchIdentityOf(nb), files: {} }))).toBe(true);
    const other = { ...nb, env: { ...nb.env, X: "1" } };
    expect(runsThisLaunch(other, st({ identity: "x", launch: launchIdentityOf(nb), files: {} }))).toBe(false);
  });
});
