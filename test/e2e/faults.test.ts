/**
 * Fault injection on the simulated site. For each fault: the error names the node, the step and
 * the fix; the state says what happened; the old .env survives byte-equal; nothing is left
 * running that should not be; and once the fault is gone, the next `pulumi up` converges.
 */
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { killNodeSshd, leftovers, nodeProcesses, restartNodeSshd, waitFor } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const DIR = "flash";
type Outcome = { status: string; failure?: string };

// Each test injects a fault into the site the one before left converged: they run in order.
describe.sequential("faults", () => {
  let e: E2E;
  let f1: SimNode;
  const env = () => readFileSync(join(f1.home, DIR, ".env"), "utf8");
  const backups = () =>
    readdirSync(join(f1.home, DIR))
      .filter((f) => f.startsWith(".env.sm121-bak-"))
      .sort();
  /** `f3Gate`: a memory gate of f3's own (node minMemAvailableGiB). */
  const stack = (profile: string, gate = 1, memTimeoutS = 30, f3Gate?: number) =>
    [
      "config:",
      `  sm121:knownHosts: ${e.site.knownHosts}`,
      `  sm121:minMemAvailableGiB: ${gate}`,
      `  sm121:memTimeoutS: ${memTimeoutS}`,
      "  sm121:readyGraceS: 0",
      nodesYaml(
        e.site,
        (n) =>
          n.name === "f1"
            ? `      vars: { tritonCache: ${n.home}/triton, mtpShardR2: ${n.home}/mtp-r2, captureDir: ` +
              `${n.home}/capture }\n      recipes:\n        qwen38-flash: { dir: ~/${DIR}, container: qwen38-flash }`
            : n.name === "f3" && f3Gate !== undefined
              ? `      minMemAvailableGiB: ${f3Gate}`
              : "",
        (n): Record<string, string> => (n.name === "f1" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      ),
      "  sm121:deployments:",
      `    - { name: flash, recipe: qwen38-flash, profile: ${profile}, nodes: [f1] }`,
      "    - { recipe: pair, nodes: [f2, f3] }",
      "",
    ].join("\n");
  const outcome = async (name: string): Promise<Outcome | undefined> => {
    const s = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: Array<{ urn: string; outputs?: { outcome?: Outcome } }> };
    };
    return s.deployment.resources.find((r) => r.urn.endsWith(`::${name}-engine`))?.outputs?.outcome;
  };
  const converge = async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect((await outcome("flash"))?.status).toBe("serving");
    expect((await outcome("pair"))?.status).toBe("serving");
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "faults",
      nodes: ["f1", "f2", "f3"],
      ...AT.site(),
      recipes: {
        "pair.toml":
          'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-32B"\n' +
          'image = "nvcr.io/nvidia/vllm:26.01-py3"\ntp = 2\nport = 8000\n[readiness]\ntimeout_s = 20\n',
      },
      prepare: (site) => {
        const n = site.nodes[0] as SimNode;
        makeScriptRecipe(n, DIR);
        mkdirSync(join(n.home, "mtp-r2"), { recursive: true });
      },
      config: () => "",
    });
    f1 = e.site.nodes[0] as SimNode;
    e.writeStack(stack("best"));
    await converge();
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("memory gate timing out: stopped, nothing written, the way back; then converges", async () => {
    const before = env();
    e.writeStack(stack("datagen", 1000, 3));
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(/node f1: memory gate, write and start exited with code 3/);
    expect(up.all).toMatch(
      new RegExp(
        String.raw`MemAvailable is \d+ GiB after 3 s, below the gate of 1000 GiB; ` +
          "free memory on the node or lower minMemAvailableGiB",
      ),
    );
    expect(up.all).toContain("To go back: set profile: best for deployment flash");
    expect((await outcome("flash"))?.status).toBe("failed");
    expect(env()).toBe(before);
    expect(leftovers(f1)).toEqual([]);
    e.writeStack(stack("datagen"));
    await converge();
  });

  it("the engine crashing during readiness: the old .env byte-equal in its backup; then converges", async () => {
    const before = env();
    setEngineBehaviour(f1, { mode: "crash-loading", crashAfterS: 1, startDelayS: 3 });
    e.writeStack(stack("capture"));
    mkdirSync(join(f1.home, "capture"), { recursive: true });
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(/node f1: readiness exited with code 4/);
    expect(up.all).toContain(`the engine exited before http://127.0.0.1:${AT.port(0)}/v1/models answered`);
    expect(up.all).toMatch(/The previous files are backed up: f1:\S+\/flash\/\.env\.sm121-bak-\d{8}T\d{6}Z/);
    expect(readFileSync(join(f1.home, DIR, backups().pop() ?? ""), "utf8")).toBe(before);
    setEngineBehaviour(f1, null);
    await converge();
  });

  it("the .env not writable: the write step fails, the old .env stays; then converges", async () => {
    const before = env();
    mkdirSync(join(f1.home, DIR, ".env.sm121-tmp"));
    e.writeStack(stack("best"));
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(/node f1: memory gate, write and start exited with code 1/);
    expect(up.all).toMatch(/\.env\.sm121-tmp: Is a directory/);
    expect(env()).toBe(before);
    rmSync(join(f1.home, DIR, ".env.sm121-tmp"), { recursive: true });
    await converge();
  });

  it("one node of a two-node deployment failing to start: marked failed; then converges", async () => {
    // f3 alone cannot pass its memory gate: f2 starts, f3 does not, and only f3's step fails.
    const f3 = e.site.nodes[2] as SimNode;
    e.writeStack(stack("best", 1, 3, 100_000));
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(
      "deployment pair is marked failed in the stack state; memory gate, write and start failed: " +
        "node f3: memory gate, write and start exited with code 3",
    );
    expect(up.all).toMatch(/MemAvailable is \d+ GiB after 3 s, below the gate of 100000 GiB/);
    expect((await outcome("pair"))?.status).toBe("failed");
    expect(leftovers(f3).filter((l) => l.includes("fake-engine"))).toEqual([]);
    e.writeStack(stack("best"));
    await converge();
    expect(leftovers(f3).filter((l) => l.includes("fake-engine"))).toHaveLength(1);
  });

  it("a node's sshd dying during an up: a transport error naming the node and the step; then converges", async () => {
    const f2 = e.site.nodes[1] as SimNode;
    // f2's engine answers after 4 s; its sshd dies while the readiness step polls it.
    setEngineBehaviour(f2, { startDelayS: 4 });
    // The plan-time look asks /v1/models too (liveness): the readiness step is the one after f2's new engine started.
    const before = new Set(nodeProcesses(f2, /fake-engine/));
    const up = e.up({ SM121_RESTART: "1" });
    const polling = () => nodeProcesses(f2, /^curl .*\/v1\/models$|^sleep 0\.1$/).length > 0;
    const restarted = () => nodeProcesses(f2, /fake-engine/).some((p) => !before.has(p));
    await waitFor("f2's readiness polling", () => restarted() && polling());
    killNodeSshd(e.site, f2);
    const res = await up;
    expect(res.code).not.toBe(0);
    expect(res.all).toContain("node f2: readiness: the connection was lost before the step ended");
    await restartNodeSshd(e.site, f2);
    setEngineBehaviour(f2, null);
    await converge();
  });

  it(
    "pulumi up interrupted with SIGINT mid-serve: nothing of the run left, no half-written file, words that say " +
      "what happened; the next up converges and waits for the load it started instead of restarting it",
    async () => {
      const f2 = e.site.nodes[1] as SimNode;
      setEngineBehaviour(f2, { startDelayS: 5 });
      // Ctrl-C once f2's new engine has started and the up waits for it: the serve is under way.
      const before = new Set(nodeProcesses(f2, /fake-engine/));
      let during = 0;
      const polling = () => nodeProcesses(f2, /^curl .*\/v1\/models$|^sleep 0\.1$/).length > 0;
      const started = waitFor(
        "f2's new engine, waited for",
        () => nodeProcesses(f2, /fake-engine/).some((p) => !before.has(p)) && polling(),
      ).then(() => void (during = projectProcesses(e.dir).length));
      const env = { SM121_RESTART: "1" };
      const up = e.pulumi.run(["up", "--yes", "--skip-preview"], { env, timeoutMs: 120_000, interruptWhen: started });
      const res = await up;
      expect(res.code).not.toBe(0);
      // What Ctrl-C leaves: no program, language host or provider of this project still running
      // (while it served, they ran)...
      expect(during).toBeGreaterThan(0);
      await waitFor("the run's processes to end", () => projectProcesses(e.dir).length === 0, 20_000);
      // ...and no half-written node file (each is written beside its place, then renamed over it).
      for (const n of e.site.nodes) expect(filesUnder(n.home).filter((f) => f.endsWith(".sm121-tmp"))).toEqual([]);
      // The words say what happened: the load goes on, the next up waits for it; no backup that was never made.
      expect(res.all).toContain(
        "The up was interrupted (Ctrl-C) while f2, f3 loaded the engine with the new settings: it was left running.",
      );
      expect(res.all).not.toContain("the previous files are in the backups above");
      const loading = nodeProcesses(f2, /fake-engine/);
      setEngineBehaviour(e.site.nodes[1] as SimNode, null);
      await converge();
      // The load the interrupted up started is the engine that serves now: not restarted.
      expect(nodeProcesses(f2, /fake-engine/)).toEqual(loading);
      const curl = "curl -s -o /dev/null -w '%{http_code}' http://$SIM_NODE_IP:8000/v1/models";
      const models = await sshScript(e.site, e.site.nodes[1] as SimNode, curl);
      expect(models.stdout).toBe("200");
    },
  );
});

/** The processes that run in the project directory or name it: the CLI's language host and plugins. */
function projectProcesses(dir: string): string[] {
  return readdirSync("/proc").filter((pid) => {
    if (!/^\d+$/.test(pid)) return false;
    try {
      return readlinkSync(`/proc/${pid}/cwd`) === dir || readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir);
    } catch {
      return false;
    }
  });
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).map((f) => join(dir, f));
}
