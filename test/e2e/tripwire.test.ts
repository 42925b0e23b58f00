/**
 * The memory tripwire on the simulated site, under a real load: a process on this machine takes
 * memory until MemAvailable falls below the node's floor (the site's nodes share this machine's
 * memory, as a Spark's engine and everything else on it share the unified memory). The tripwire
 * stops the engine and records why; the look says so in words and what to change; the keeper backs
 * off instead of starting the engine into the same load; with the load gone, an up serves again.
 * The floor is set a few GiB below what is available when the suite starts, and the load takes
 * only what crosses it.
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { sm121 } from "../cli-helpers";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode } from "../site/site";
import { modelsIn } from "../helpers/json";
import { KIB_PER_GIB, load, machineWedgeFacts, memAvailableKiB } from "../helpers/machine";

const AT = allocate(__filename);

const recipe = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "tw"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
[readiness]
timeout_s = 60
`;

describe.sequential("the memory tripwire: a load takes the node's memory", () => {
  let e: E2E;
  let t1: SimNode;
  let floorGiB = 0;
  let held: ReturnType<typeof load> | undefined;
  const sh = async (script: string) => (await sshScript(e.site, t1, script)).stdout.trim();
  const stateDir = () => join(t1.home, ".sm121", "deployments", "tw");

  beforeAll(async () => {
    // A few GiB below what the machine has now: other suites beside this one load engines too.
    floorGiB = Math.max(2, Math.floor(memAvailableKiB() / KIB_PER_GIB) - 6);
    e = await e2eProject({
      name: "tripwire",
      nodes: ["t1"],
      ...AT.site(),
      recipes: { "small.toml": recipe },
      nodeExtra: () => `      memFloorGiB: ${floorGiB}`,
      config: () => "  sm121:deployments:\n    - { name: tw, recipe: small, nodes: [t1] }",
    });
    t1 = e.site.nodes[0] as SimNode;
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 300_000);
  afterAll(async () => {
    held?.end();
    await e?.stop();
  });

  it("stops the engine when MemAvailable falls below the floor, and records why", async () => {
    expect(existsSync(join(stateDir(), "tripwire.json"))).toBe(false);
    held = load(floorGiB * KIB_PER_GIB, 256 * 1024);
    const crossedMs = await held.crossed;
    const record = join(stateDir(), "tripwire.json");
    for (let i = 0; i < 100 && !existsSync(record); i++) await new Promise((r) => setTimeout(r, 100));
    const r = JSON.parse(readFileSync(record, "utf8")) as {
      stoppedMs: number;
      memAvailableKiB: number;
      floorKiB: number;
    };
    expect(r.floorKiB).toBe(floorGiB * KIB_PER_GIB);
    expect(r.memAvailableKiB).toBeLessThan(r.floorKiB);
    expect(r.stoppedMs).toBeGreaterThanOrEqual(crossedMs - 1000);
    console.log(`tripwire: MemAvailable crossed ${floorGiB} GiB, engine stopped ${r.stoppedMs - crossedMs} ms later`);
    expect(await sh("docker ps -q --filter name=sm121-tw-0")).toBe("");
    const said = readFileSync(join(stateDir(), "logs", "tripwire.log"), "utf8");
    expect(said).toContain(`fell below the floor ${floorGiB} GiB: stopped the engine`);
  }, 120_000);

  it("says in the plan who stopped it and what to change; the keeper backs off", async () => {
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("t1: stopped by the memory tripwire at");
    expect(preview.all).toContain(`(floor ${floorGiB.toFixed(1)} GiB)`);
    expect(preview.all).toContain("let it take less memory first");
    const st = await sm121(e, ["status"], { env: e.pulumi.env, timeoutMs: 120_000 });
    expect(st.stdout).toContain("  t1: stopped by the memory tripwire at");
    const log = join(e.dir, "keep.jsonl");
    rmSync(log, { force: true });
    const keep = await sm121(e, ["keep", "--once", "--log", log], { env: e.pulumi.env, timeoutMs: 300_000 });
    // Not serving, so the pass is red (a scheduled `keep --once` shows it); it waits, it does not start.
    expect(keep.code, keep.stdout + keep.stderr).toBe(1);
    expect(keep.stdout + keep.stderr).toContain("before it tries again (sm121:keep backoff)");
    const lines = readFileSync(log, "utf8")
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { action: string });
    expect(lines).toMatchObject([{ deployment: "tw", action: "waits" }]);
    expect(await sh("docker ps -q --filter name=sm121-tw-0")).toBe("");
  }, 300_000);

  it("an up into the same load fails naming the tripwire; with the load gone, an up serves again", async () => {
    const into = await e.up();
    expect(into.code).not.toBe(0);
    expect(into.all).toContain("the memory tripwire stopped the engine before");
    expect(into.all).toContain("The memory tripwire on t1 stopped the engine");
    held?.end();
    held = undefined;
    for (let i = 0; i < 50 && memAvailableKiB() < (floorGiB + 1) * KIB_PER_GIB; i++)
      await new Promise((r) => setTimeout(r, 200));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    const models = modelsIn(await sh(`curl -s -m 5 http://${t1.ip}:8000/v1/models`));
    expect(models[0]?.id).toBe("tw");
    expect(existsSync(join(stateDir(), "tripwire.json"))).toBe(false);
  }, 300_000);

  it("sm121 doctor says what makes the node wedge under memory pressure, and what to do", async () => {
    writeFileSync(join(t1.root, "etc", "sysctl.json"), JSON.stringify({ "vm.watermark_scale_factor": "300" }));
    const r = await sm121(e, ["doctor", "--json"], { env: e.pulumi.env, timeoutMs: 120_000 });
    const report = JSON.parse(r.stdout) as {
      nodes: Array<{
        node: string;
        checks: Array<{ check: string; subject: string; ok: boolean; hint: string | null }>;
      }>;
    };
    const wedge = report.nodes[0]?.checks.filter((c) => c.check === "wedge") ?? [];
    const ok = Object.fromEntries(wedge.map((c) => [c.subject, c.ok]));
    // This machine's facts (every simulated node's): its swap, its OOM killer, its /dev/shm.
    const m = machineWedgeFacts();
    expect(ok).toEqual({
      swap: !m.swap,
      "oom-killer": m.oomKiller,
      "/dev/shm": true,
      "vm.watermark_scale_factor": false,
    });
    const wsf = wedge.find((c) => c.subject === "vm.watermark_scale_factor");
    expect(wsf?.hint).toContain(`the memory gate (1 GiB) and the tripwire's floor (${floorGiB} GiB)`);
  }, 180_000);
});
