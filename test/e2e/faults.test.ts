/**
 * Fault injection on the simulated site. For each fault: the error names the node, the step and
 * the fix; the state says what happened; the old .env survives byte-equal; nothing is left
 * running that should not be; and once the fault is gone, the next `pulumi up` converges.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { killNodeSshd, leftovers, restartNodeSshd } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineBehaviour, type SimNode } from "../site/site";

const DIR = "flash";
type Outcome = { status: string; failure?: string };

describe("faults", () => {
  let e: E2E;
  let f1: SimNode;
  const env = () => readFileSync(join(f1.home, DIR, ".env"), "utf8");
  const backups = () => readdirSync(join(f1.home, DIR)).filter((f) => f.startsWith(".env.sm121-bak-")).sort();
  const stack = (profile: string, gate = 1, memTimeoutS = 30) =>
    ["config:", `  sm121:knownHosts: ${e.site.knownHosts}`, `  sm121:minMemAvailableGiB: ${gate}`, `  sm121:memTimeoutS: ${memTimeoutS}`, "  sm121:readyGraceS: 0",
      nodesYaml(e.site, (n) => (n.name === "f1" ? `      vars: { tritonCache: ${n.home}/triton, mtpShardR2: ${n.home}/mtp-r2, captureDir: ${n.home}/capture }\n      recipes:\n        qwen38-flash: { dir: ~/${DIR}, container: qwen38-flash }` : ""), (n): Record<string, string> => (n.name === "f1" ? { BIND: "127.0.0.1", PORT: "18493" } : {})),
      "  sm121:deployments:", `    - { name: flash, recipe: qwen38-flash, profile: ${profile}, nodes: [f1] }`, "    - { recipe: pair, nodes: [f2, f3] }", ""].join("\n");
  const outcome = async (name: string): Promise<Outcome | undefined> => {
    const s = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as { deployment: { resources: Array<{ urn: string; outputs?: { outcome?: Outcome } }> } };
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
      firstIp: 96,
      sshPort: 2296,
      recipes: { "pair.toml": 'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-32B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\ntp = 2\nport = 8000\n[readiness]\ntimeout_s = 20\n' },
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
    expect(up.all).toMatch(/MemAvailable is \d+ GiB after 3 s, below the gate of 1000 GiB; free memory on the node or lower minMemAvailableGiB/);
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
    expect(up.all).toMatch(/the engine exited before http:\/\/127\.0\.0\.1:18493\/v1\/models answered/);
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
    const [, f2, f3] = e.site.nodes as [SimNode, SimNode, SimNode];
    setEngineBehaviour(f2, { rendezvousTimeoutS: 3 });
    setEngineBehaviour(f3, { mode: "exit-now" });
    e.writeStack(stack("best").replace("nodes: [f2, f3] }", "nodes: [f2, f3], name: pair }"));
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code).not.toBe(0);
    expect(up.all).toMatch(/deployment pair is marked failed in the stack state; readiness failed: (node f2|f3: the engine of rank 1 is not running)/);
    expect((await outcome("pair"))?.status).toBe("failed");
    setEngineBehaviour(f2, null);
    setEngineBehaviour(f3, null);
    e.writeStack(stack("best"));
    await converge();
    expect(leftovers(f3).filter((l) => l.includes("fake-engine"))).toHaveLength(1);
  });

  it("a node's sshd dying during an up: a transport error naming the node; then converges", async () => {
    const f3 = e.site.nodes[2] as SimNode;
    setEngineBehaviour(e.site.nodes[1] as SimNode, { startDelayS: 4 });
    const up = e.up({ SM121_RESTART: "1" });
    await new Promise((r) => setTimeout(r, 3000));
    killNodeSshd(f3);
    const res = await up;
    expect(res.code).not.toBe(0);
    expect(res.all).toMatch(/node f3/);
    await restartNodeSshd(e.site, f3);
    setEngineBehaviour(e.site.nodes[1] as SimNode, null);
    await converge();
  });

  it("pulumi up interrupted with SIGINT mid-serve: the next up converges", async () => {
    setEngineBehaviour(e.site.nodes[1] as SimNode, { startDelayS: 5 });
    const up = e.pulumi.run(["up", "--yes", "--skip-preview"], { env: { SM121_RESTART: "1" }, timeoutMs: 120_000, signalAfterMs: 3500 });
    const res = await up;
    expect(res.code).not.toBe(0);
    setEngineBehaviour(e.site.nodes[1] as SimNode, null);
    await converge();
    const models = await sshScript(e.site, e.site.nodes[1] as SimNode, "curl -s -o /dev/null -w '%{http_code}' http://$SIM_NODE_IP:8000/v1/models");
    expect(models.stdout).toBe("200");
  });
});
