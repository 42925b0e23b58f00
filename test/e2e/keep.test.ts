/**
 * `sm121 keep --once` through the real Pulumi CLI (the Automation API) on the simulated site: an
 * engine that dies or hangs (SIGSTOP) while nobody watches is repaired by an up of its deployment
 * alone; a protected node is only looked at; a recipe edited and not applied is left as it is.
 * The blocks build on each other in order (one site, one stack).
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { sm121 } from "../cli-helpers";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { setEngineBehaviour, type SimNode } from "../site/site";
import { rebootNode, waitFor } from "../site/faults";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);

const recipe = (served: string, maxLen: number, tp = 1, port = 8000) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "${served}"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = ${port}
tp = ${tp}
args = ["--max-model-len", "${maxLen}"]
[readiness]
timeout_s = 60
`;

interface Line {
  deployment: string;
  action: string;
  why: string[];
  servingAfterS?: number;
  error?: string;
}

describe.sequential("sm121 keep: repairs between runs, and only repairs", () => {
  let e: E2E;
  let k1: SimNode;
  let k2: SimNode;
  let k3: SimNode;
  let k4: SimNode;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout.trim();
  const keep = async (env: Record<string, string> = {}, log = join(e.dir, "keep.jsonl")) => {
    rmSync(log, { force: true });
    const r = await sm121(e, ["keep", "--once", "--log", log], {
      env: { ...e.pulumi.env, ...env },
      timeoutMs: 300_000,
    });
    const text = existsSync(log) ? readFileSync(log, "utf8").trim() : "";
    const lines = text === "" ? [] : text.split("\n").map((l) => JSON.parse(l) as Line);
    return { ...r, lines };
  };
  /** The stack's update locks in the file backend (Pulumi's own: .pulumi/locks/...). */
  const locks = () => {
    const dir = join(new URL(e.pulumi.env["PULUMI_BACKEND_URL"] ?? "").pathname, ".pulumi", "locks");
    return existsSync(dir) ? readdirSync(dir, { recursive: true }).filter((f) => String(f).endsWith(".json")) : [];
  };
  /** The stack's settings, with sm121:liveness allowing `maxRestarts` health restarts an hour. */
  const config = (maxRestarts: number) =>
    [
      `  sm121:liveness: { timeout: 2, maxRestarts: ${maxRestarts}, windowS: 3600 }`,
      "  sm121:keep: { maxFailures: 2, backoffS: 1 }",
      "  sm121:deployments:",
      "    - { name: a, recipe: alpha, nodes: [k1] }",
      "    - { name: p, recipe: beta, nodes: [k2] }",
      "    - { name: g, recipe: gamma, nodes: [k3, k4] }",
    ].join("\n");
  const served = async (n: SimNode, port = 8000) =>
    modelsIn(await sh(n, `curl -s -m 5 http://${n.ip}:${port}/v1/models`))[0]?.id;

  beforeAll(async () => {
    e = await e2eProject({
      name: "keep",
      nodes: ["k1", "k2", "k3", "k4"],
      ...AT.site(),
      recipes: {
        "alpha.toml": recipe("alpha", 8192),
        "beta.toml": recipe("beta", 8192),
        // Its rendezvous (the port + 1000) away from 9000, which other suites' engines use.
        "gamma.toml": recipe("gamma", 8192, 2, 8300),
      },
      nodeExtra: (n) => (n.name === "k2" ? "      protected: true" : ""),
      config: () => config(20),
    });
    [k1, k2, k3, k4] = e.site.nodes as [SimNode, SimNode, SimNode, SimNode];
    const up = await e.up({ SM121_ALLOW_PROTECTED: "k2" });
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 300_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("does nothing where everything serves", async () => {
    const r = await keep();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.lines).toEqual([]);
  }, 300_000);

  it("serves again an engine that died, with an up of its deployment alone", async () => {
    await sh(k1, "docker rm -f sm121-a-0 >/dev/null");
    const r = await keep();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.lines).toMatchObject([{ deployment: "a", action: "repaired" }]);
    expect(r.lines[0]?.why.join("\n")).toContain("k1: the engine is not running");
    expect(r.lines[0]?.servingAfterS).toBeGreaterThan(0);
    expect(await served(k1)).toBe("alpha");
  }, 300_000);

  it("serves again an engine stopped by SIGSTOP (hung: no answer, its process stopped)", async () => {
    const before = await sh(k1, "docker inspect -f '{{.State.StartedAt}}' sm121-a-0");
    await sh(k1, "docker kill -s STOP sm121-a-0 >/dev/null");
    const r = await keep();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.lines).toMatchObject([{ deployment: "a", action: "repaired" }]);
    expect(await sh(k1, "docker inspect -f '{{.State.StartedAt}}' sm121-a-0")).not.toBe(before);
    expect(await served(k1)).toBe("alpha");
    // sm121 status says what the keeper did there, when, why, and how long until serving.
    const st = await sm121(e, ["status", "--node", "k1"], { env: e.pulumi.env, timeoutMs: 120_000 });
    expect(st.stdout).toMatch(/k1: the keeper's last action: repaired at \S+Z, because k1: .*; serving again \d/);
  }, 300_000);

  it("serves again after its node rebooted: the look knows the reboot, the keeper brings it back", async () => {
    const boot = await sh(k1, "cat /proc/sys/kernel/random/boot_id");
    await rebootNode(e.site, k1);
    expect(await sh(k1, "cat /proc/sys/kernel/random/boot_id")).not.toBe(boot);
    expect(await sh(k1, "docker ps -q --filter name=sm121-a-0")).toBe("");
    const preview = await e.preview();
    expect(preview.all).toContain("k1: rebooted since the last up");
    const r = await keep();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.lines).toMatchObject([{ deployment: "a", action: "repaired" }]);
    expect(r.lines[0]?.why.join("\n")).toContain("k1: rebooted since the last up");
    expect(await served(k1)).toBe("alpha");
    const again = await e.preview();
    expect(again.all).not.toContain("rebooted since the last up");
  }, 300_000);

  it("brings a two-node group back after its worker rebooted: stopped on every rank, started as one", async () => {
    const started = (n: SimNode, c: string) => sh(n, `docker inspect -f '{{.State.StartedAt}}' ${c}`);
    const head = await started(k3, "sm121-g-0");
    await rebootNode(e.site, k4);
    expect(await sh(k4, "docker ps -q --filter name=sm121-g-1")).toBe("");
    const preview = await e.preview();
    expect(preview.all).toContain("k4: rebooted since the last up");
    expect(preview.all).toContain("on all its nodes (k3, k4), stopped and started as one group");
    const r = await keep();
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.lines).toMatchObject([{ deployment: "g", action: "repaired" }]);
    expect(r.lines[0]?.why.join("\n")).toContain("k4: rebooted since the last up");
    // The head on the node that did not reboot was stopped and started with its worker.
    expect(await started(k3, "sm121-g-0")).not.toBe(head);
    expect(await sh(k4, "docker inspect -f '{{.State.Running}}' sm121-g-1")).toBe("true");
    expect(await served(k3, 8300)).toBe("gamma");
  }, 300_000);

  it("two keepers at once: one repairs, the stack's lock stops the other, which says so", async () => {
    // A repair that holds the lock long enough for the second keeper's look and up to meet it.
    setEngineBehaviour(k1, { startDelayS: 10 });
    try {
      await sh(k1, "docker rm -f sm121-a-0 >/dev/null");
      const first = keep({}, join(e.dir, "keep-1.jsonl"));
      await waitFor("the first keeper's up holding the stack's lock", () => locks().length > 0, 120_000);
      const second = await keep({}, join(e.dir, "keep-2.jsonl"));
      const one = await first;
      expect(one.code, one.stdout + one.stderr).toBe(0);
      expect(one.lines).toMatchObject([{ deployment: "a", action: "repaired" }]);
      expect(second.code).toBe(1);
      expect(second.lines).toMatchObject([{ deployment: "a", action: "locked" }]);
      expect(second.stdout).toMatch(
        /sm121 keep: a: locked: .*another up holds the lock of stack \S+ \(another keeper, or an operator\)/,
      );
    } finally {
      setEngineBehaviour(k1, null);
    }
    expect(await served(k1)).toBe("alpha");
    // The next pass finds it serving and does nothing.
    expect((await keep()).lines).toEqual([]);
  }, 300_000);

  it("leaves a protected node's engine down without the allowance, and says so", async () => {
    await sh(k2, "docker rm -f sm121-p-0 >/dev/null");
    const r = await keep();
    expect(r.code).toBe(1);
    expect(r.lines).toMatchObject([{ deployment: "p", action: "left" }]);
    expect(r.lines[0]?.why.join("\n")).toContain("k2 protected: the keeper leaves it");
    expect(await sh(k2, "docker ps -aq --filter name=sm121-p-0")).toBe("");
    // With the allowance it repairs there too.
    const allowed = await keep({ SM121_ALLOW_PROTECTED: "k2" });
    expect(allowed.code, allowed.stdout + allowed.stderr).toBe(0);
    expect(allowed.lines).toMatchObject([{ deployment: "p", action: "repaired" }]);
    expect(await served(k2)).toBe("beta");
  }, 300_000);

  it("applies no change nobody applied: an edited recipe with its engine down is left as it is", async () => {
    const file = join(e.dir, "recipes", "alpha.toml");
    const before = readFileSync(file, "utf8");
    writeFileSync(file, recipe("alpha", 4096));
    try {
      await sh(k1, "docker rm -f sm121-a-0 >/dev/null");
      const r = await keep();
      expect(r.lines).toMatchObject([{ deployment: "a", action: "left" }]);
      expect(r.lines[0]?.why.join("\n")).toContain("k1: ");
      expect(await sh(k1, "docker ps -aq --filter name=sm121-a-0")).toBe("");
    } finally {
      writeFileSync(file, before);
    }
    // The recipe as the last up applied it: the keeper serves it again.
    const r = await keep();
    expect(r.lines).toMatchObject([{ deployment: "a", action: "repaired" }]);
    expect(await served(k1)).toBe("alpha");
  }, 300_000);

  it("gives up on a repair that keeps failing across --once runs: recorded, said by plan and status", async () => {
    setEngineBehaviour(k1, { mode: "exit-now" });
    try {
      await sh(k1, "docker rm -f sm121-a-0 >/dev/null");
      const first = await keep();
      expect(first.lines, first.stdout + first.stderr).toMatchObject([{ deployment: "a", action: "failed" }]);
      // A second run remembers the first failure from the node (keeper.json): after the backoff,
      // its failed repair is the second of maxFailures 2.
      await new Promise((res) => setTimeout(res, 1200));
      const second = await keep();
      expect(second.lines, second.stdout + second.stderr).toMatchObject([{ deployment: "a", action: "gave-up" }]);
      const third = await keep();
      expect(third.lines).toMatchObject([{ deployment: "a", action: "gave-up" }]);
      const preview = await e.preview();
      expect(preview.all).toContain("the keeper gave up on a after 2 tries: the up failed:");
      const st = await sm121(e, ["status", "--node", "k1"], { env: e.pulumi.env, timeoutMs: 120_000 });
      expect(st.stdout).toContain("k1: the keeper gave up after 2 tries at");
    } finally {
      setEngineBehaviour(k1, null);
    }
    // An operator's up serves it again, and the keeper's giving up is gone with it.
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await served(k1)).toBe("alpha");
    expect((await e.preview()).all).not.toContain("the keeper gave up");
  }, 300_000);

  it("leaves an engine that sm121:liveness holds (restarted too often in its window) down, and says why", async () => {
    // The engine of a has restarted for its health more than once this hour.
    e.reconfigure(config(1));
    await sh(k1, "docker rm -f sm121-a-0 >/dev/null");
    const r = await keep();
    expect(r.code).toBe(1);
    expect(r.lines, r.stdout).toMatchObject([{ deployment: "a", action: "left" }]);
    expect(r.lines[0]?.error).toContain("the up left a alone: it restarted sm121:liveness maxRestarts times");
    expect(r.stdout).not.toContain("repaired");
    expect(await sh(k1, "docker ps -aq --filter name=sm121-a-0")).toBe("");
  }, 300_000);
});
