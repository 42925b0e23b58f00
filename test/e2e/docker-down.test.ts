/**
 * A node whose Docker Engine does not answer (stopped as `systemctl stop docker` stops it), through
 * the real Pulumi CLI: `docker inspect` fails there as it fails for a missing container, so the
 * plan says what docker said instead of "container gone"; the up's preflight fails with docker's
 * error and touches nothing (the script recipe's .env stays as it was); a destroy does not report
 * deleted what docker cannot see; once the engines answer again the next up converges.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import { restartNodeEngine, stopNodeEngine } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const RECIPE_DIR = "spark-recipes/qwen38-flash";
const CANNOT = "Cannot connect to the Docker daemon at unix://";
const SOLO = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "solo"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = 8000
[readiness]
timeout_s = 60
`;

function extra(n: SimNode): string {
  if (n.name !== "dd2") return "";
  return [
    `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38, mtpShardR2: ${n.home}/models/qwen38-mtp-r2 }`,
    "      recipes:",
    `        qwen38-flash: { dir: ~/${RECIPE_DIR}, container: qwen38-flash, ownedMounts: [/recipe/files] }`,
  ].join("\n");
}

describe.sequential("a node whose Docker Engine does not answer", () => {
  let e: E2E;
  let dd1: SimNode;
  let dd2: SimNode;
  const backups = () => readdirSync(join(dd2.home, RECIPE_DIR)).filter((f) => f.startsWith(".env.sm121-bak-"));

  beforeAll(async () => {
    e = await e2eProject({
      name: "dockerdown",
      nodes: ["dd1", "dd2"],
      ...AT.site(),
      recipes: { "solo.toml": SOLO },
      nodeExtra: extra,
      nodeEnv: (n): Record<string, string> => (n.name === "dd2" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      prepare: (site) => {
        makeScriptRecipe(site.nodes[1] as SimNode, RECIPE_DIR);
      },
      config: () =>
        [
          "  sm121:deployments:",
          "    - { name: solo, recipe: solo, nodes: [dd1] }",
          "    - { name: flash, recipe: qwen38-flash, profile: datagen, nodes: [dd2] }",
        ].join("\n"),
    });
    [dd1, dd2] = e.site.nodes as [SimNode, SimNode];
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves a docker deployment and a script recipe", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
  });

  it("plans with docker's own reason and fails the up's preflight on it, touching nothing", async () => {
    await stopNodeEngine(e.site, dd1);
    await stopNodeEngine(e.site, dd2);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    for (const n of [dd1, dd2]) {
      expect(preview.all).toContain(`${n.name}: the engine is not running (docker does not answer: ${CANNOT}`);
    }
    expect(preview.all).not.toContain("container gone");
    const env = readFileSync(join(dd2.home, RECIPE_DIR, ".env"), "utf8");
    const kept = backups();
    const up = await e.up();
    expect(up.code).not.toBe(0);
    // The preflight's look for another vLLM container fails on docker's error, before any stop.
    expect(up.all).toContain(`docker does not answer: ${CANNOT}`);
    expect(readFileSync(join(dd2.home, RECIPE_DIR, ".env"), "utf8")).toBe(env);
    expect(backups()).toEqual(kept);
  });

  it("does not report a deployment destroyed while docker cannot say its container is gone", async () => {
    const d = await e.destroy();
    expect(d.code).not.toBe(0);
    // The script recipe's stop.sh forgives docker's failures; sm121's check after it does not.
    expect(d.all).toContain(`docker does not answer, so whether container qwen38-flash is gone is unknown: ${CANNOT}`);
    const left = await e.pulumi.run(["stack", "export"]);
    expect(left.stdout).toContain("sm121:EngineDeployment::flash-engine");
  });

  it("converges once the engines answer again", async () => {
    await restartNodeEngine(e.site, dd1);
    await restartNodeEngine(e.site, dd2);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await sshOk(e.site, dd1, "docker ps --format '{{.Names}}'")).toBe("sm121-solo-0\n");
    expect(await sshOk(e.site, dd2, "docker ps --format '{{.Names}}'")).toBe("qwen38-flash\n");
  });
});
