/**
 * A wrong key fails at once, and Ctrl-C ends any wait: through the real Pulumi CLI, an API key
 * holding a double quote reaches the probe intact (the engine answers it); a probe answered 401
 * ends readiness at once with the reason, never the key; and the first Ctrl-C (SIGINT to pulumi)
 * during a long readiness wait ends the up, the deployment recorded as failed in the state.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { nodeProcesses, waitFor } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const QUOTED = 'sk-"quoted"-key-9d1c';
const RECIPE =
  'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\n' +
  "port = 8000\n[readiness]\ntimeout_s = 900\n";
const FLASH = "{ name: flash, recipe: qwen38-flash, profile: datagen, nodes: [r2] }";
/** The node lines of the script recipe's node: its vars and where the recipe is. */
const FLASH_NODE = (home: string) =>
  `      vars: { tritonCache: ${home}/triton }\n      recipes:\n` +
  "        qwen38-flash: { dir: ~/flash, container: qwen38-flash }";

describe.sequential("readiness and the API key", () => {
  let e: E2E;
  let n1: SimNode;
  let n2: SimNode;
  const config = (deployments: string[]) =>
    ["  sm121:deployments:", ...deployments.map((d) => `    - ${d}`)].join("\n");
  const setKey = async (key: string) =>
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: key })).code).toBe(0);
  /** A rewritten stack file keeps only the ssh key of the secrets (helpers/project): the API key is set again. */
  const reconfigure = async (deployments: string[]) => {
    e.reconfigure(config(deployments));
    await setKey(QUOTED);
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "readiness-key",
      nodes: ["r1", "r2"],
      ...AT.site(),
      nodeEnv: (n): Record<string, string> => (n.name === "r2" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      nodeExtra: (n) => (n.name === "r2" ? FLASH_NODE(n.home) : ""),
      prepare: (site) => void makeScriptRecipe(site.nodes[1] as SimNode, "flash"),
      recipes: { "keyed.toml": RECIPE },
      config: () => config(["{ recipe: keyed, nodes: [r1] }"]),
    });
    [n1, n2] = e.site.nodes as [SimNode, SimNode];
    await setKey(QUOTED);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("sends a key holding double quotes as it is: the engine takes it and the up passes", async () => {
    // With its preview: the Cancel call that ends the preview's provider host ends no step of the update.
    const up = await e.pulumi.run(["up", "--yes"], { timeoutMs: 150_000 });
    expect(up.code, up.all).toBe(0);
    expect(up.all).not.toContain(QUOTED);
  });

  it("ends readiness at once when the engine refuses the key sm121 holds, naming no key", async () => {
    // The operator's own .env gives the script recipe's engine another key (start.sh passes it
    // as --api-key); sm121 holds sm121:apiKey, which that engine refuses with 401.
    writeFileSync(join(n2.home, "flash", ".env"), "API_KEY='the-engines-own-key'\n");
    await reconfigure(["{ recipe: keyed, nodes: [r1] }", FLASH]);
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { timeoutMs: 150_000 });
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("the engine refuses the API key sm121 holds for it (HTTP 401 from /v1/models)");
    expect(up.all).toContain("deployment flash is marked failed in the stack state");
    for (const k of [QUOTED, "the-engines-own-key"]) expect(up.all).not.toContain(k);
    await reconfigure(["{ recipe: keyed, nodes: [r1] }"]);
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
  });

  it("ends a long readiness wait on the first Ctrl-C, leaving the deployment failed in the state", async () => {
    setEngineBehaviour(n1, { mode: "never-ready" });
    const before = new Set(nodeProcesses(n1, /fake-engine/));
    const waiting = waitFor("the new engine", () => nodeProcesses(n1, /fake-engine/).some((p) => !before.has(p)));
    const run = { env: { SM121_RESTART: "1" }, timeoutMs: 120_000, interruptWhen: waiting };
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], run);
    expect(up.code, up.all).not.toBe(null);
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("interrupted (Ctrl-C)");
    type State = { deployment: { resources?: Array<{ type: string; outputs?: { outcome?: { status?: string } } }> } };
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as State;
    const engine = (state.deployment.resources ?? []).find((r) => r.type.endsWith(":EngineDeployment"));
    expect(engine?.outputs?.outcome?.status).toBe("failed");
    // The interrupted load goes on (a real engine would finish it); this one never would, so the next up
    // would wait for it to its readiness timeout: the operator restarts it.
    setEngineBehaviour(n1, null);
    const again = await e.up({ SM121_RESTART: "1" });
    expect(again.code, again.all).toBe(0);
  }, 240_000);
});
