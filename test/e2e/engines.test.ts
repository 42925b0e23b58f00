/**
 * SGLang in tmux on two nodes and gr8 on four, end to end: the drivers' contracts reach the real
 * processes, gr8's before_serve hook runs on every node before its engine starts, and destroy
 * leaves no session or container.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const deployments = `  sm121:deployments:
    - { recipe: qwen3-30b-sglang-tmux, nodes: [n1, n2] }
    - { recipe: glm53-full-tp4-gr8, nodes: [n3, n4, n5, n6] }`;

// The tests run in order on one site, each from the state the one before left.
describe.sequential("SGLang in tmux and gr8 in docker through pulumi up", () => {
  let e: E2E;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout;
  beforeAll(async () => {
    e = await e2eProject({
      name: "engines",
      nodes: ["n1", "n2", "n3", "n4", "n5", "n6"],
      ...AT.site(),
      config: () => deployments,
    });
    for (const n of e.site.nodes) mkdirSync(join(n.home, "gr8-cache"), { recursive: true });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves both, each rank with its engine's contract", async () => {
    const [n1, n2, n3, n4] = e.site.nodes as [SimNode, SimNode, SimNode, SimNode];
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    // SGLang: every rank has a tmux session and takes --host/--port; rank 0 answers.
    expect(await sh(n1, "tmux ls -F '#{session_name}'")).toBe("sm121-qwen3-30b-sglang-tmux-0\n");
    expect(await sh(n2, "tmux ls -F '#{session_name}'")).toBe("sm121-qwen3-30b-sglang-tmux-1\n");
    const run1 = await sh(n2, "cat ~/.sm121/deployments/qwen3-30b-sglang-tmux/run.sh");
    expect(run1).toContain(`--host ${n2.ip} --port 30000 --nnodes 2 --node-rank 1 --dist-init-addr ${n1.ip}:31000`);
    expect(run1).toContain(`export SGLANG_WORKER_IP=${n2.ip}`);
    const sg = JSON.parse(await sh(n1, `curl -s http://${n1.ip}:30000/v1/models`)) as {
      data: Array<{ id: string; max_model_len: number }>;
    };
    expect(sg.data[0]).toMatchObject({ id: "qwen3-30b-a3b", max_model_len: 65536 });
    // gr8: four containers, no host/port flags, the API on the first peer's :8100.
    const peers = e.site.nodes
      .slice(2)
      .map((n) => n.ip)
      .join(",");
    const args = JSON.parse(await sh(n4, "docker inspect -f '{{json .Args}}' sm121-glm53-full-tp4-gr8-1")) as string[];
    expect(args).toEqual([
      "glm53",
      "up",
      "--model",
      "zai-org/GLM-5.3-FP8",
      "--tp",
      "4",
      "--peers",
      peers,
      "--model-cache",
      "/models",
      "--drafter",
      "mtp-k4",
      "--shape",
      "full",
    ]);
    const gr = JSON.parse(await sh(n3, `curl -s http://${n3.ip}:8100/v1/models`)) as { data: Array<{ id: string }> };
    expect(gr.data[0]?.id).toBe("zai-org/GLM-5.3-FP8");
  });

  it("ran gr8's before_serve hook on every node before its engine started", async () => {
    for (const n of e.site.nodes.slice(2)) {
      const log = readFileSync(join(n.root, "var", "log", "sysctl.log"), "utf8");
      const m = /^(\S+) .*vm\.compaction_proactiveness=0/m.exec(log);
      expect(m, `${n.name}: ${log}`).not.toBeNull();
      const created = (await sh(n, "docker inspect -f '{{.Created}}' $(docker ps -q)")).trim();
      expect(Date.parse(m?.[1] ?? "")).toBeLessThan(Date.parse(created.replace(/(\.\d{3})\d+/, "$1")));
    }
  });

  it("destroys: no tmux session, no container, no engine process", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    for (const n of e.site.nodes) {
      expect(await sh(n, "tmux ls 2>/dev/null | wc -l; docker ps -aq | wc -l")).toBe("0\n0\n");
      expect(await sh(n, 'pgrep -f "SIM_NODE_ROOT=$SIM_NODE_ROOT" -c || true')).toMatch(/^0?\n?$/);
    }
  });
});
