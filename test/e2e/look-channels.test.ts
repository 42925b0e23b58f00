/**
 * What each operation costs the nodes, counted on the nodes (sshd's log, the channels the node's
 * ForceCommand ran, the calls of the node's docker CLI: test/site/sessions.ts), through the real
 * Pulumi CLI: the plan-time look opens one connection and one exec channel per node and makes at
 * most one docker call there (which also answers the fabric's image check), a no-change up costs
 * the nodes no more than the look, a destroy one channel per deployment on a node; and nothing a
 * session started on a node outlives the operation (the progress watcher of an up's stop among
 * them).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { countSince, installSessionCounter, snapshot, type NodeCount } from "../site/sessions";
import { sessionLeftovers } from "../site/procs";
import { buildImage } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

/** A docker vLLM on two nodes: the fabric look compares the image's ID between them. */
const pair = (rev: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "pair"
image = "nvcr.io/nvidia/vllm:26.01-py3"
tp = 2
port = 8000
[env]
REV = "${rev}"
[readiness]
timeout_s = 60
`;
/** Two docker vLLMs that share a node, each with a port and a share of its memory of its own. */
const solo = (name: string, port: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "${name}"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = ${port}
args = ["--gpu-memory-utilization", "0.4"]
[readiness]
timeout_s = 60
`;

describe.sequential("what each operation costs a node", () => {
  let e: E2E;

  beforeAll(async () => {
    e = await e2eProject({
      name: "lookcost",
      nodes: ["lc1", "lc2", "lc3"],
      ...AT.site(),
      recipes: { "pair.toml": pair(1), "solo.toml": solo("solo", 8000), "side.toml": solo("side", 8001) },
      // Two deployments on lc3: its look still makes one docker call.
      config: () =>
        [
          "  sm121:deployments:",
          "    - { name: pair, recipe: pair, nodes: [lc1, lc2] }",
          "    - { name: solo, recipe: solo, nodes: [lc3] }",
          "    - { name: side, recipe: side, nodes: [lc3] }",
        ].join("\n"),
    });
    installSessionCounter(e.site);
  });
  afterAll(async () => {
    await e?.stop();
  });

  /** Runs an operation; what it cost each node; and that nothing a session started there is left. */
  const measure = async (f: () => Promise<{ code: number | null; all: string }>): Promise<NodeCount[]> => {
    const before = snapshot(e.site);
    const r = await f();
    expect(r.code, r.all).toBe(0);
    const counts = countSince(e.site, before, true);
    // The memory tripwire runs beside the engine as long as the engine does (docs/operating.md): no leftover.
    const tripwire = /\/\.sm121\/deployments\/[^/]+\/tripwire\.sh$/;
    for (const n of e.site.nodes)
      expect(
        sessionLeftovers(n)
          .map((p) => p.what)
          .filter((w) => !tripwire.test(w)),
        n.name,
      ).toEqual([]);
    return counts;
  };
  const per = (cs: NodeCount[], k: "accepted" | "channels" | "docker") => cs.map((c) => [c.node, c[k]]);
  let look: NodeCount[] = [];

  it("serves", async () => {
    await measure(() => e.up());
  });

  it("looks at each node over one connection and one channel, with at most one docker call", async () => {
    look = await measure(() => e.preview());
    expect(per(look, "accepted")).toEqual([
      ["lc1", 1],
      ["lc2", 1],
      ["lc3", 1],
    ]);
    expect(per(look, "channels")).toEqual([
      ["lc1", 1],
      ["lc2", 1],
      ["lc3", 1],
    ]);
    expect(per(look, "docker")).toEqual([
      ["lc1", 1],
      ["lc2", 1],
      ["lc3", 1],
    ]);
    expect(look.map((c) => c.dockerBy)).toEqual([{ inspect: 1 }, { inspect: 1 }, { inspect: 1 }]);
  });

  it("costs the nodes no more than the look on an up that changes nothing", async () => {
    const up = await measure(() => e.up());
    for (const k of ["accepted", "channels", "docker"] as const) expect(per(up, k)).toEqual(per(look, k));
  });

  it("leaves nothing running after an up that restarts an engine (its stop's progress watcher)", async () => {
    writeFileSync(join(e.dir, "recipes", "pair.toml"), pair(2));
    await measure(() => e.up());
  });

  it("refuses a plan whose image differs between a deployment's nodes, from the same one docker call", async () => {
    const image = "nvcr.io/nvidia/vllm:26.01-py3";
    // Another build of the image under the same name on lc2 (built there: an ID of its own).
    const [lc2] = e.site.nodes.filter((n) => n.name === "lc2");
    const other = await buildImage(e.site, lc2 as SimNode, image, `FROM ${image}\nLABEL sm121.test=another-build`);
    const before = snapshot(e.site);
    const preview = await e.preview();
    expect(preview.code).not.toBe(0);
    const ids = `lc1 sha256:[0-9a-f]{12}, lc2 ${other.slice(0, 19)}`;
    const differs = `differs between its nodes: ${ids}; set sm121:imageSync`;
    expect(preview.all).toMatch(new RegExp(`pair: the image ${image.replace(/[./]/g, "\\$&")} ${differs}`));
    expect(per(countSince(e.site, before, true), "docker")).toEqual(per(look, "docker"));
  });

  it("destroys with one channel per deployment on each node", async () => {
    const down = await measure(() => e.destroy());
    // lc3 holds two deployments: each one's delete is a resource operation of its own.
    expect(per(down, "channels")).toEqual([
      ["lc1", 1],
      ["lc2", 1],
      ["lc3", 2],
    ]);
  });
});
