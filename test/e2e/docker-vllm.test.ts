/**
 * End to end with the real Pulumi CLI on the simulated site: a docker vLLM deployment on one node
 * and a tensor-parallel one on two nodes; a no-change up restarts nothing; destroy leaves nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import type { SimNode } from "../site/site";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);

const deployments = `  sm121:gateway: { path: ~/litellm/models.yaml, format: litellm, node: spark1 }
  sm121:deployments:
    - { name: solo, recipe: qwen3-8b-solo, nodes: [spark1] }
    - { recipe: qwen3-32b-vllm-tp2, nodes: [spark2, spark3] }`;

const SOLO = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "16384"]
[readiness]
timeout_s = 60
max_model_len = 16384
`;

const sh = (e: E2E, node: SimNode, script: string): Promise<string> => sshOk(e.site, node, script);

// The tests run in order on one site, each from the state the one before left.
describe.sequential("docker vLLM through pulumi up", () => {
  let e: E2E;
  beforeAll(async () => {
    e = await e2eProject({
      name: "dockervllm",
      nodes: ["spark1", "spark2", "spark3"],
      ...AT.site(),
      config: () => deployments,
      recipes: { "qwen3-8b-solo.toml": SOLO },
    });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves both deployments, and a second up touches nothing", async () => {
    const [n1, n2, n3] = e.site.nodes as [SimNode, SimNode, SimNode];
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(await sh(e, n1, "docker ps -q | wc -l")).toBe("0\n");

    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    // The node scripts' raw records stay out of the log unless the run is verbose (SM121_VERBOSE=1).
    expect(up.all).not.toContain("@sm121");
    const models = await sh(e, n1, `curl -s http://${n1.ip}:8000/v1/models`);
    expect(modelsIn(models)[0]?.id).toBe("qwen3-8b");
    const tp = await sh(e, n2, `curl -s http://${n2.ip}:8000/v1/models`);
    expect(modelsIn(tp)[0]).toMatchObject({ id: "qwen3-32b", max_model_len: 32768 });
    expect(await sh(e, n3, "docker ps --format '{{.Names}}'")).toBe("sm121-qwen3-32b-vllm-tp2-1\n");
    const worker = await sh(e, n3, "docker inspect -f '{{json .Args}}' sm121-qwen3-32b-vllm-tp2-1");
    expect(JSON.parse(worker)).toEqual(expect.arrayContaining(["--headless", "--node-rank", "1"]));
    expect(JSON.parse(worker)).not.toContain("--port");

    const out = await e.pulumi.run(["stack", "output", "--json"]);
    const exported = JSON.parse(out.stdout) as Record<string, { endpoints: string[]; status: string }>;
    expect(exported["solo"]).toMatchObject({ endpoints: [`http://${n1.ip}:8000`], status: "serving" });

    // The gateway file, in LiteLLM's format, written on spark1.
    const lite = parse(await sh(e, n1, "cat ~/litellm/models.yaml")) as {
      model_list: Array<{ model_name: string; litellm_params: { api_base: string } }>;
    };
    expect(lite.model_list.map((m) => [m.model_name, m.litellm_params.api_base])).toEqual([
      ["qwen3-8b", `http://${n1.ip}:8000/v1`],
      ["qwen3-32b", `http://${n2.ip}:8000/v1`],
    ]);

    const before = await sh(e, n1, "docker inspect -f '{{.State.StartedAt}}' sm121-solo-0");
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).toMatch(/unchanged/);
    expect(again.all).not.toMatch(/updated|created/);
    expect(await sh(e, n1, "docker inspect -f '{{.State.StartedAt}}' sm121-solo-0")).toBe(before);
  });

  it("destroys: no container is left on any node", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    for (const n of e.site.nodes) expect(await sh(e, n, "docker ps -aq | wc -l")).toBe("0\n");
  });
});
