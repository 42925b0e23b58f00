/**
 * The gate of an up (a recipe's `[gate]`), through the real Pulumi CLI on the simulated site: the
 * first up records the baseline; a build that streams slower (`--max-num-seqs 1` under the gate's
 * concurrency of 4: the fake engine's scheduler runs one request at a time, as vLLM's does) is
 * rolled back to the previous bundle and the up fails with the numbers side by side and the flag
 * that changed; SM121_ACCEPT_SLOWER accepts it once and says so; a faster build passes and becomes
 * the baseline. The fake engine streams at a fixed rate (etc/fake-engine.json, tokensPerSecond).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { setEngineBehaviour, type SimNode } from "../site/site";
import { sshScript } from "../site/exec";

const AT = allocate(__filename);

const recipe = (args: string[]) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ${JSON.stringify(args)}
[readiness]
timeout_s = 30
[gate]
requests = 8
concurrency = 4
prompt_tokens = 16
max_tokens = 20
`;

interface Measure {
  tokensPerS: number;
  ttftMs: number;
  identity: string;
  digest?: string;
}
interface Gate {
  baseline?: Measure;
  last?: Measure & { verdict: string };
}

describe("the gate of an up", () => {
  let e: E2E;
  let n: SimNode;
  const write = (args: string[]) => writeFileSync(join(e.dir, "recipes", "gt.toml"), recipe(args));
  const outputs = async () => {
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: Array<{ type: string; outputs?: Record<string, unknown> }> };
    };
    const r = state.deployment.resources.find((x) => x.type.endsWith(":EngineDeployment"));
    return r?.outputs as { gate?: Gate; outcome?: { status: string; rolledBack?: boolean } };
  };
  const maxNumSeqs = async () => {
    const argv = await sshScript(e.site, n, "docker inspect -f '{{json .Args}}' sm121-gt-0");
    return argv.stdout.includes("--max-num-seqs");
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "gate",
      nodes: ["spark1"],
      ...AT.site(),
      recipes: { "gt.toml": recipe([]) },
      config: () => "  sm121:deployments:\n    - { recipe: gt, nodes: [spark1] }",
    });
    n = e.site.nodes[0] as SimNode;
    // Each request streams 40 tokens a second: 8 requests of 20 tokens, 4 at once, take about 1 s.
    setEngineBehaviour(n, { tokensPerSecond: 40 });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("records the first up's numbers as the baseline", async () => {
    const res = await e.up();
    expect(res.code, res.all).toBe(0);
    expect(res.all).toContain("gt: the gate's first run: these numbers are its baseline");
    const gate = (await outputs()).gate;
    expect(gate?.last?.verdict).toBe("baseline");
    // 4 at once at 40 tokens/s each: about 160 output tokens/s.
    expect(gate?.baseline?.tokensPerS).toBeGreaterThan(100);
    expect(gate?.baseline?.digest).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("rolls a slower build back to the previous bundle; the up fails with the numbers and what changed", async () => {
    const before = (await outputs()).gate?.baseline;
    write(["--max-num-seqs", "1"]);
    const res = await e.up();
    expect(res.code).not.toBe(0);
    expect(res.all).toContain("the gate of gt failed on spark1: slower than its baseline");
    expect(res.all).toMatch(/output tokens\/s: baseline [0-9.]+, now [0-9.]+, limit at least [0-9.]+: worse/);
    expect(res.all).toContain("what changed since the baseline: flags + --max-num-seqs 1");
    expect(res.all).toContain("SM121_ACCEPT_SLOWER=gt");
    expect(res.all).toContain("sm121 rolled back (the gate): gt serves the previous bundle");
    const o = await outputs();
    expect(o.outcome).toMatchObject({ status: "failed", rolledBack: true });
    expect(o.gate?.baseline).toEqual(before);
    expect(o.gate?.last?.verdict).toBe("slower");
    expect(o.gate?.last?.tokensPerS).toBeLessThan((before?.tokensPerS ?? 0) * 0.9);
    // The previous bundle serves again: no --max-num-seqs on the engine's command line.
    expect(await maxNumSeqs()).toBe(false);
  });

  it("accepts the slower build once with SM121_ACCEPT_SLOWER, says so, and makes it the baseline", async () => {
    const res = await e.up({ SM121_ACCEPT_SLOWER: "gt" });
    expect(res.code, res.all).toBe(0);
    expect(res.all).toContain("gt: slower than its baseline, accepted once by SM121_ACCEPT_SLOWER=gt");
    expect(await maxNumSeqs()).toBe(true);
    const gate = (await outputs()).gate;
    expect(gate?.last?.verdict).toBe("accepted");
    expect(gate?.baseline?.tokensPerS).toBe(gate?.last?.tokensPerS);
  });

  it("passes a faster build and makes its numbers the new baseline", async () => {
    const slow = (await outputs()).gate?.baseline;
    write([]);
    const res = await e.up();
    expect(res.code, res.all).toBe(0);
    expect(res.all).toContain("gt: within the gate's tolerances: the roll goes on");
    const gate = (await outputs()).gate;
    expect(gate?.last?.verdict).toBe("passed");
    expect(gate?.baseline?.tokensPerS).toBeGreaterThan((slow?.tokensPerS ?? 0) * 2);
    expect(await maxNumSeqs()).toBe(false);
  });
});
