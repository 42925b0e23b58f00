/**
 * A tag that moves under a running engine (issue 47: images by digest) through the real Pulumi CLI
 * and the node's real Docker Engine: the image is rebuilt on the node under the same tag; the plan
 * says in words that the tag moved, from which image to which, and the up restarts the engine on the
 * new image; the next plan is empty. The keeper applies no such change: it leaves it and says why.
 */
import { existsSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sm121 } from "../cli-helpers";
import { e2eProject, type E2E } from "../helpers/project";
import { modelsIn } from "../helpers/json";
import { allocate } from "../site/alloc";
import { buildImage, sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);
const IMAGE = "registry.example/sm121/moving-vllm:1";
const build = (n: number) => `FROM nvcr.io/nvidia/vllm:26.01-py3\nLABEL sm121.test.build=${n}`;
/** An image ID as `docker images` shows it. */
const short = (id: string) => id.replace(/^sha256:/, "").slice(0, 12);

describe.sequential("a tag that moved under a running engine", () => {
  let e: E2E;
  let t1: SimNode;
  const sh = async (script: string) => (await sshScript(e.site, t1, script)).stdout.trim();
  const running = () => sh("docker inspect -f '{{.Image}}' sm121-moving-0");
  let first = "";

  beforeAll(async () => {
    e = await e2eProject({
      name: "tag-moved",
      nodes: ["t1"],
      ...AT.site(),
      recipes: {
        "moving.toml": `engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nimage = "${IMAGE}"\nport = 8000\n`,
      },
      config: () => "  sm121:deployments:\n    - { name: moving, recipe: moving, nodes: [t1] }",
    });
    [t1] = e.site.nodes as [SimNode];
    first = await buildImage(e.site, t1, IMAGE, build(1));
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 300_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("is said in the plan, from which image to which, and the up restarts the engine on the new one", async () => {
    expect(await running()).toBe(first);
    const moved = await buildImage(e.site, t1, IMAGE, build(2));
    expect(moved).not.toBe(first);
    const said = `t1: the tag ${IMAGE} moved: the engine runs image ${short(first)}, the tag now names ${short(moved)}`;
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(`moving: restarts t1: ${said}`);
    // The engine still runs the old image: a plan restarts nothing.
    expect(await running()).toBe(first);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(said);
    expect(await running()).toBe(moved);
    expect(modelsIn(await sh(`curl -s -m 5 http://${t1.ip}:8000/v1/models`))).not.toEqual([]);
    const again = await e.preview();
    expect(again.all).not.toContain("moved");
    expect(again.all).not.toMatch(/restarts t1/);
  }, 300_000);

  it("is a change nobody applied to the keeper: it leaves the engine on its image and says so", async () => {
    const before = await running();
    await buildImage(e.site, t1, IMAGE, build(3));
    const log = join(e.dir, "keep.jsonl");
    rmSync(log, { force: true });
    const r = await sm121(e, ["keep", "--once", "--log", log], { env: e.pulumi.env, timeoutMs: 300_000 });
    const lines = existsSync(log) ? readFileSync(log, "utf8").trim().split("\n") : [];
    expect(lines, r.stdout + r.stderr).toHaveLength(1);
    const line = JSON.parse(lines[0] ?? "{}") as { action?: string; why?: string[] };
    expect(line.action).toBe("left");
    expect(line.why?.join("\n")).toContain(`t1: the tag ${IMAGE} moved`);
    expect(await running()).toBe(before);
  }, 300_000);
});
