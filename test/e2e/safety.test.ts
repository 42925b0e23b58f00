/**
 * What keeps a node safe, end to end: a protected node is refused without the run's allowance and
 * served with it; an engine that never becomes ready fails the up at its readiness timeout, leaves
 * the deployment marked failed and says how to go back; an invalid recipe fails the preview before
 * any node is touched.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { setEngineBehaviour, type SimNode, type SimSite } from "../site/site";
import { modelsIn } from "../helpers/json";
import { smallVllm } from "../helpers/spec";

const AT = allocate(__filename);

function stack(site: SimSite, protect: boolean): string {
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    `  sm121:gateway: { path: ${site.dir}/gateway-backends.json, format: sm121 }`,
    nodesYaml(site, () => (protect ? "      protected: true" : "")),
    "  sm121:deployments:",
    "    - { name: guarded, recipe: small, nodes: [spark1] }",
    "",
  ].join("\n");
}

// The tests run in order, each from the state the one before left (protected, served, failed).
describe.sequential("safety of pulumi up", () => {
  let e: E2E;
  let n: SimNode;
  const recipeFile = () => join(e.dir, "recipes", "small.toml");
  const sh = async (script: string) => (await sshScript(e.site, n, script)).stdout;

  beforeAll(async () => {
    e = await e2eProject({
      name: "safety",
      nodes: ["spark1"],
      ...AT.site(),
      config: () => "",
      recipes: { "small.toml": smallVllm(30) },
    });
    n = e.site.nodes[0] as SimNode;
    e.writeStack(stack(e.site, true));
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses a protected node without the allowance, before touching it", async () => {
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(
      "node spark1 is protected and this run would restart guarded on it; " +
        "run with SM121_ALLOW_PROTECTED=spark1 to allow it",
    );
    expect(await sh("docker ps -aq | wc -l; ls ~/.sm121 2>/dev/null | wc -l")).toBe("0\n0\n");
  });

  it("serves it with the allowance; a no-change up needs none", async () => {
    const up = await e.up({ SM121_ALLOW_PROTECTED: "spark1" });
    expect(up.code, up.all).toBe(0);
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    // The stack, the provider host, the Site, the Deployment, its engine and the gateway file.
    expect(again.all).toMatch(/\b6 unchanged\b/);
  });

  it("fails an engine that never becomes ready within its timeout, marked failed, with the way back", async () => {
    e.writeStack(stack(e.site, false));
    writeFileSync(recipeFile(), smallVllm(4, 16384));
    setEngineBehaviour(n, { mode: "never-ready" });
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(
      "deployment guarded is marked failed in the stack state; readiness failed: node spark1: " +
        "readiness exited with code 5",
    );
    expect(up.all).toMatch(/did not answer 200 within 4 s/);
    expect(up.all).toContain("To go back: revert the change to the recipe or the site");
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: Array<{ type: string; outputs?: { outcome?: { status: string; failure: string } } }> };
    };
    const engine = state.deployment.resources.find((r) => r.type.endsWith(":EngineDeployment"));
    expect(engine?.outputs?.outcome?.status).toBe("failed");
    // The gateway file says so at once (its only endpoint stays enabled, not also marked disabled:
    // the first-endpoint rule, with a warning).
    const gw = JSON.parse(readFileSync(join(e.site.dir, "gateway-backends.json"), "utf8")) as {
      models: Array<{ status: string; endpoints: Array<{ enabled: boolean; disabled?: string }> }>;
    };
    expect(gw.models[0]).toMatchObject({ status: "failed", endpoints: [{ enabled: true }] });
    expect(gw.models[0]?.endpoints[0]?.disabled).toBeUndefined();
    expect(up.all).toContain(
      "model qwen3-8b: no endpoint is usable (the deployment is failed); " +
        "spark1 stays enabled so that the gateway accepts the config",
    );
    // The next up retries the failed deployment (no-change is not "done" while it is failed).
    setEngineBehaviour(n, null);
    const retry = await e.up();
    expect(retry.code, retry.all).toBe(0);
    expect(retry.all).toMatch(/2 updated/);
    expect(modelsIn(await sh(`curl -s http://${n.ip}:8000/v1/models`))[0]?.max_model_len).toBe(16384);
    const healed = JSON.parse(readFileSync(join(e.site.dir, "gateway-backends.json"), "utf8")) as {
      models: Array<{ name: string; status: string; endpoints: Array<{ url: string; enabled: boolean }> }>;
    };
    expect(healed.models).toEqual([
      {
        name: "qwen3-8b",
        deployment: "guarded",
        status: "serving",
        endpoints: [{ node: "spark1", url: `http://${n.ip}:8000`, enabled: true }],
      },
    ]);
  });

  it("fails the preview of an invalid recipe with file, line and field, touching no node", async () => {
    const dir = join(n.home, ".sm121", "deployments", "guarded");
    // What the node holds: the container's start, and every file sm121 wrote with its content.
    const node = async () => ({
      startedAt: await sh("docker inspect -f '{{.State.StartedAt}}' sm121-guarded-0"),
      files: Object.fromEntries(
        readdirSync(dir, { recursive: true, encoding: "utf8" })
          .filter((f) => statSync(join(dir, f)).isFile())
          .sort()
          .map((f) => [f, readFileSync(join(dir, f), "utf8")]),
      ),
    });
    const before = await node();
    expect(Object.keys(before.files)).toContain("engine.env");
    writeFileSync(recipeFile(), smallVllm(4, 16384).replace("port = 8000", 'port = 8000\ntp = "two"'));
    const preview = await e.preview();
    expect(preview.code).not.toBe(0);
    expect(preview.all).toContain("recipes/small.toml:7:1: tp: expected number, got string; write a number");
    expect(await node()).toEqual(before);
    writeFileSync(recipeFile(), smallVllm(4, 16384));
  });
});
