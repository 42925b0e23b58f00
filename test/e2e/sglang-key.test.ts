/**
 * SGLang with sm121:apiKey, through the real Pulumi CLI: the engine gets the key from a 0600
 * --config file next to secrets.env (tmux, and docker with the file mounted), never from argv;
 * its API refuses a request without the key and answers one with it, and readiness (which sends
 * the key) still passes.
 */
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const KEY = "sk-sglang-e2e-'quoted'-7c1d";

describe("an SGLang endpoint with sm121:apiKey", () => {
  let e: E2E;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout;
  beforeAll(async () => {
    e = await e2eProject({
      name: "sglang-key",
      nodes: ["k1", "k2", "k3"],
      ...AT.site(),
      recipes: {
        "sg-docker.toml":
          'engine = "sglang"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "q8"\n' +
          'image = "lmsysorg/sglang:spark"\nport = 30000\n',
      },
      config: () =>
        "  sm121:deployments:\n    - { recipe: qwen3-30b-sglang-tmux, nodes: [k1, k2] }\n" +
        "    - { recipe: sg-docker, nodes: [k3] }",
    });
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: KEY })).code).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses a request without the key and serves one with it, in tmux and in docker", async () => {
    const [k1, k2, k3] = e.site.nodes as [SimNode, SimNode, SimNode];
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).not.toContain(KEY);
    const code = (n: SimNode, port: number, auth: string) =>
      sh(n, `curl -s -o /dev/null -w '%{http_code}' ${auth} http://${n.ip}:${port}/v1/models`);
    for (const n of [k1, k3]) {
      expect(await code(n, 30000, ""), n.name).toBe("401");
      expect(await code(n, 30000, "-H 'Authorization: Bearer wrong'"), n.name).toBe("401");
      expect(await code(n, 30000, `-H ${JSON.stringify(`Authorization: Bearer ${KEY}`)}`), n.name).toBe("200");
    }
    // The health check stays open, as SGLang keeps /health out of the key's reach.
    expect(await sh(k1, `curl -s -o /dev/null -w '%{http_code}' http://${k1.ip}:30000/health`)).toBe("200");
    expect(await sh(k2, `curl -s -o /dev/null -w '%{http_code}' http://${k2.ip}:30000/health`)).toBe("200");
  });

  it("keeps the key in a 0600 file next to secrets.env and out of every argv", async () => {
    const [k1, , k3] = e.site.nodes as [SimNode, SimNode, SimNode];
    const file = join(k1.home, ".sm121", "deployments", "qwen3-30b-sglang-tmux", "api-key.yaml");
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(readFileSync(file, "utf8")).toBe(`api-key: '${KEY.replace(/'/g, "''")}'\n`);
    expect(await sh(k1, "cat ~/.sm121/deployments/qwen3-30b-sglang-tmux/run.sh")).toContain(
      '--config "$HOME"/.sm121/deployments/qwen3-30b-sglang-tmux/api-key.yaml',
    );
    const args = JSON.parse(await sh(k3, "docker inspect -f '{{json .Args}}' sm121-sg-docker-0")) as string[];
    expect(args.slice(args.indexOf("--config"), args.indexOf("--config") + 2)).toEqual([
      "--config",
      "/run/sm121/api-key.yaml",
    ]);
    const ps = await sh(k1, "ps -eo args");
    expect(ps).toContain("sglang");
    expect(ps).not.toContain(KEY);
  });
});
