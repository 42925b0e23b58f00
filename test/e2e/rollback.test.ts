/**
 * rollback = "auto": a new bundle whose engine never becomes ready is rolled back; the previous
 * bundle serves again, the up still fails and says so, and the state says failed + rolled back.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const recipe = (maxLen: number, expect: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "${maxLen}"]
rollback = "auto"
[readiness]
timeout_s = 20
max_model_len = ${expect}
`;

describe("automatic rollback", () => {
  let e: E2E;
  let n: SimNode;
  beforeAll(async () => {
    e = await e2eProject({
      name: "rollback",
      nodes: ["spark1"],
      ...AT.site(),
      recipes: { "rb.toml": recipe(8192, 8192) },
      config: () => "  sm121:deployments:\n    - { recipe: rb, nodes: [spark1] }",
    });
    n = e.site.nodes[0] as SimNode;
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("restores the previous bundle when the new one fails its readiness verification", async () => {
    expect((await e.up()).code).toBe(0);
    // The new bundle serves 16384 but the recipe expects 99999: readiness verification fails.
    writeFileSync(join(e.dir, "recipes", "rb.toml"), recipe(16384, 99999));
    const res = await e.up();
    expect(res.code).not.toBe(0);
    expect(res.all).toContain("max_model_len is 16384, the recipe expects 99999");
    expect(res.all).toMatch(
      new RegExp(
        `sm121 rolled back \\(rollback = "auto"\\): rb serves the previous bundle [0-9a-f]{12} ` +
          `again at http://${n.ip.replace(/\./g, "\\.")}:8000 \\(qwen3-8b\\)`,
      ),
    );
    const models = JSON.parse((await sshScript(e.site, n, "curl -s http://$SIM_NODE_IP:8000/v1/models")).stdout) as {
      data: Array<{ max_model_len: number }>;
    };
    expect(models.data[0]?.max_model_len).toBe(8192);
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: {
        resources: Array<{ type: string; outputs?: { outcome?: { status: string; rolledBack?: boolean } } }>;
      };
    };
    expect(
      state.deployment.resources.find((r) => r.type.endsWith(":EngineDeployment"))?.outputs?.outcome,
    ).toMatchObject({ status: "failed", rolledBack: true });
    expect(readFileSync(join(n.home, ".sm121", "deployments", "rb", "engine.env"), "utf8")).toContain("VLLM_HOST_IP=");
  });
});
