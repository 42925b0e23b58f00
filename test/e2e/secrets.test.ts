/**
 * Secrets audit: HF_TOKEN and API_KEY set as Pulumi secrets, and HF_TOKEN kept from an old .env,
 * never occur in plain text in the Pulumi state, the CLI's output, any log on the nodes, or the
 * argv of any process during the run (sampled from /proc/<pid>/cmdline).
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const HF = "hf_AuditTokenValue7f3a9c";
const KEY = "sk-audit-key-41d2e8b6";
const OLD_HF = "hf_OldEnvToken55c0de";

/**
 * Every process's argv, sampled until stopped; returns the samples that contained a secret. A scan
 * reads every /proc/<pid>/cmdline of the machine (other suites' sites too), so the next one waits
 * at least twice as long as the last took: the sampler never holds the test's event loop most of
 * the time, however many processes run beside it.
 */
function sampleArgv(secrets: string[]): { stop: () => string[] } {
  const hits = new Set<string>();
  let timer: NodeJS.Timeout | undefined;
  const scan = () => {
    const started = Date.now();
    for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
      let argv: string;
      try {
        argv = readFileSync(`/proc/${pid}/cmdline`, "utf8");
      } catch {
        continue;
      }
      for (const s of secrets) if (argv.includes(s)) hits.add(`${pid}: ${argv.replace(/\0/g, " ")}`);
    }
    timer = setTimeout(scan, Math.max(25, 2 * (Date.now() - started)));
  };
  scan();
  return { stop: () => (clearTimeout(timer), [...hits]) };
}

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(p));
    else if (e.isFile() && statSync(p).size < 20_000_000) out.push(p);
  }
  return out;
}

describe("secrets", () => {
  let e: E2E;
  let flashNode: SimNode;
  beforeAll(async () => {
    e = await e2eProject({
      name: "secrets",
      nodes: ["s1", "s2"],
      ...AT.site(),
      nodeEnv: (n): Record<string, string> => (n.name === "s1" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      nodeExtra: (n) =>
        n.name === "s1"
          ? `      vars: { tritonCache: ${n.home}/triton }\n      recipes:\n` +
            `        qwen38-flash: { dir: ~/flash, container: qwen38-flash }`
          : "",
      prepare: (site) => {
        const s1 = site.nodes[0] as SimNode;
        makeScriptRecipe(s1, "flash");
        writeFileSync(join(s1.home, "flash", ".env"), `HF_TOKEN="${OLD_HF}"\n`);
      },
      recipes: {
        "guarded.toml":
          'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "q"\n' +
          'image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n',
      },
      config: () =>
        "  sm121:deployments:\n" +
        "    - { name: flash, recipe: qwen38-flash, profile: datagen, nodes: [s1] }\n" +
        "    - { recipe: guarded, nodes: [s2] }",
    });
    flashNode = e.site.nodes[0] as SimNode;
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:hfToken"], { input: HF })).code).toBe(0);
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: KEY })).code).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves with the secrets on the nodes, and nowhere else in plain text", async () => {
    const sampler = sampleArgv([HF, KEY, OLD_HF]);
    // Bounded below the test's own timeout, so that a run that hangs fails with what it printed.
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { timeoutMs: 200_000 });
    const preview = await e.preview();
    const leaked = sampler.stop();
    expect(up.code, up.all).toBe(0);
    expect(leaked).toEqual([]);
    for (const out of [up.all, preview.all]) for (const s of [HF, KEY, OLD_HF]) expect(out).not.toContain(s);
    // The key works: /v1 needs it, and it is on the node where the engine reads it.
    const s2 = e.site.nodes[1] as SimNode;
    const denied = await sshScript(
      e.site,
      s2,
      "curl -s --max-time 10 -o /dev/null -w '%{http_code}' http://$SIM_NODE_IP:8000/v1/models",
    );
    expect(denied.stdout).toBe("401");
    // The Pulumi state (the raw file of the file:// backend, and its export) holds ciphertext only.
    const stateFiles = filesUnder(join(e.dir, "..", "pulumi", "state"));
    expect(stateFiles.length).toBeGreaterThan(0);
    const exported = (await e.pulumi.run(["stack", "export"])).stdout;
    for (const text of [exported, ...stateFiles.map((f) => readFileSync(f, "utf8"))])
      for (const s of [HF, KEY, OLD_HF]) expect(text).not.toContain(s);
    // Logs on the nodes: sm121's, the engines', docker's, sshd's.
    const logs = filesUnder(e.site.dir).filter((f) => /\.log$|\/logs\/|json\.log|-json\.log/.test(f));
    expect(logs.length).toBeGreaterThan(3);
    for (const f of logs) for (const s of [HF, KEY, OLD_HF]) expect(readFileSync(f, "utf8"), f).not.toContain(s);
    // Where they belong: the script recipe's .env keeps its old HF_TOKEN unless a Pulumi secret replaces it.
    const env = readFileSync(join(flashNode.home, "flash", ".env"), "utf8");
    expect(env).toContain(`HF_TOKEN="${HF}"`);
    expect(env).not.toContain("API_KEY");
    expect(up.all).toContain("sm121:apiKey is not written into the .env of script recipe qwen38-flash");
  }, 300_000);
});
