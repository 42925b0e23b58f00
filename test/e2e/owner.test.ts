/**
 * A node belongs to the stack that serves it, through the real Pulumi CLI with two stacks of one
 * project on one site: each deployment's marker on a node records its owner (project, stack,
 * backend); another stack's plan that would stop it is refused, naming the owner, the node and how
 * to hand the node over; SM121_ALLOW_TAKEOVER=<node> allows it for one run; the owner's next plan
 * shows the takeover as drift in words; and what an up says it will stop is true for every node.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

type Owner = Record<string, string>;

const RECIPES = {
  "quick.toml":
    'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "quick"\n' +
    'image = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\n',
  "slow.toml":
    'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "slow"\n' +
    'image = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\n',
};

const KEEP = "    - { name: keep, recipe: quick, nodes: [o2] }";

describe.sequential("two stacks, one site", () => {
  let e: E2E;
  let o1: SimNode;
  const other = (args: string[], env: Record<string, string> = {}) =>
    e.pulumi.run([...args, "--stack", "other"], { env });
  const ownerOn = (n: SimNode) =>
    JSON.parse(readFileSync(join(n.home, ".sm121", "deployments", "quick", "owner.json"), "utf8")) as Owner;
  const served = async (n: SimNode) => (await sshScript(e.site, n, `curl -s http://${n.ip}:8000/v1/models`)).stdout;

  beforeAll(async () => {
    e = await e2eProject({
      name: "owner",
      nodes: ["o1", "o2", "o3"],
      ...AT.site(),
      recipes: RECIPES,
      config: () => ["  sm121:deployments:", "    - { recipe: quick, nodes: [o1] }", KEEP].join("\n"),
    });
    o1 = e.site.nodes[0] as SimNode;
    // Stack "other" of the same project: slow on o1 (where sim serves quick), nothing elsewhere.
    const file = join(e.dir, "Pulumi.other.yaml");
    const head = ["config:", `  sm121:knownHosts: ${e.site.knownHosts}`, "  sm121:minMemAvailableGiB: 1"];
    const tail = ["  sm121:deployments:", "    - { recipe: slow, nodes: [o1] }", ""];
    writeFileSync(file, [...head, "  sm121:readyGraceS: 0", nodesYaml(e.site), ...tail].join("\n"));
    expect((await e.pulumi.run(["stack", "init", "other"])).code).toBe(0);
    const key = { input: readFileSync(e.site.clientKey, "utf8") };
    const set = ["config", "set", "--secret", "sm121:sshPrivateKey", "--stack", "other"];
    expect((await e.pulumi.run(set, key)).code).toBe(0);
    expect((await e.pulumi.run(["stack", "select", "sim"])).code).toBe(0);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("records the owner of each deployment on its node", () => {
    expect(ownerOn(o1)).toEqual({ project: "sm121", stack: "sim", backend: e.pulumi.env["PULUMI_BACKEND_URL"] });
  });

  it("refuses another stack's plan that would stop it, naming owner, node and the hand-over", async () => {
    for (const run of [() => other(["preview"]), () => other(["up", "--yes", "--skip-preview"])]) {
      const r = await run();
      expect(r.code).not.toBe(0);
      expect(r.all).toContain("o1: deployment quick of stack sim (project sm121) runs there, and this run would stop");
      expect(r.all).toContain("SM121_ALLOW_TAKEOVER=o1");
      expect(r.all).toContain("pulumi destroy --stack sim");
      // Nothing of sim's is said to stop where nothing of this stack runs.
      expect(r.all).not.toMatch(/o2: deployment keep is no longer declared there/);
    }
    expect(await served(o1)).toContain('"id":"quick"');
  });

  it("takes the node over with SM121_ALLOW_TAKEOVER; the owner's plan then says so", async () => {
    const up = await other(["up", "--yes", "--skip-preview"], { SM121_ALLOW_TAKEOVER: "o1" });
    expect(up.code, up.all).toBe(0);
    expect(await served(o1)).toContain('"id":"slow"');
    const preview = await e.preview();
    expect(preview.all).toContain("o1 now serves slow of stack other");
    const refused = await e.up();
    expect(refused.code).not.toBe(0);
    expect(refused.all).toContain("o1: deployment slow of stack other (project sm121) runs there, and this run would");
  });

  it("after the other stack's destroy, the owner's plan shows its engine gone and its up serves it again", async () => {
    const d = await other(["destroy", "--yes", "--skip-preview"]);
    expect(d.code, d.all).toBe(0);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(/o1: .*stopped by deployment slow of stack other/);
    expect(preview.all).toMatch(/\bto update\b/);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await served(o1)).toContain('"id":"quick"');
  });

  it("hands a deployment of the same name back to its owner when the stack that took it leaves", async () => {
    const file = join(e.dir, "Pulumi.other.yaml");
    // (`pulumi config set` wrote the file again, in its own YAML layout.)
    const text = readFileSync(file, "utf8");
    expect(text).toMatch(/recipe: slow/);
    writeFileSync(file, text.replace(/recipe: slow/, "recipe: quick"));
    const refused = await other(["up", "--yes", "--skip-preview"]);
    expect(refused.code).not.toBe(0);
    expect(refused.all).toContain("o1: deployment quick of stack sim (project sm121) runs there");
    const up = await other(["up", "--yes", "--skip-preview"], { SM121_ALLOW_TAKEOVER: "o1" });
    expect(up.code, up.all).toBe(0);
    expect((await e.preview()).all).toContain("o1 now serves quick of stack other");
    expect((await other(["destroy", "--yes", "--skip-preview"])).code).toBe(0);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("o1: deployment quick was stopped by deployment quick of stack other, which has");
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
    expect(await served(o1)).toContain('"id":"quick"');
    expect(ownerOn(o1)["stack"]).toBe("sim");
  });
});
