/**
 * The operator's week (issue 26), part two, through the real Pulumi CLI on the simulated site: the
 * gateway file as seed 001 says (an edited or deleted file is written again by a plain up; a downed
 * deployment's endpoint stays in the file, disabled in LiteLLM's own way, checked with the real
 * LiteLLM loader; a destroy disables every endpoint and keeps the file); a stop that fails is a
 * failure (the deployment stays, the node says so, the next destroy tries again); and one memory
 * budget per node, with two deployments served on one node.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { json, sm121 } from "../cli-helpers";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { nodeProcesses } from "../site/faults";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";
import { matching } from "../helpers/json";

const AT = allocate(__filename);

const MEMORY = [
  "[memory]",
  "weights_gb = 16.4",
  "num_hidden_layers = 36",
  "num_key_value_heads = 8",
  "head_dim = 128",
  'torch_dtype = "bfloat16"',
  "",
].join("\n");
const recipe = (served: string, port: number, util: string) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "${served}"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = ${port}
args = ["--max-model-len", "8192", "--gpu-memory-utilization", "${util}"]
[readiness]
timeout_s = 30
${MEMORY}`;

/** The real LiteLLM proxy's own loader (scripts/venvs.sh builds it): the model_list entries its Router takes. */
const LITELLM_PYTHON = join(process.env["HOME"] ?? "", ".cache", "sm121", "litellm", "bin", "python");
function litellmDeployments(text: string): string[] {
  const program = [
    "import sys, yaml",
    "from litellm import Router",
    "cfg = yaml.safe_load(sys.stdin)",
    "print(' '.join(sorted(d['model_info']['id'] for d in Router(model_list=cfg['model_list']).model_list)))",
  ].join("\n");
  const env = { ...process.env, LITELLM_LOCAL_MODEL_COST_MAP: "True" };
  const r = spawnSync(LITELLM_PYTHON, ["-c", program], { input: text, encoding: "utf8", env, timeout: 120_000 });
  if (r.status !== 0) throw new Error(`LiteLLM's loader refused the file:\n${r.stderr}`);
  return r.stdout
    .trim()
    .split(" ")
    .filter((x) => x !== "");
}

describe.sequential("the operator's week, part two", () => {
  let e: E2E;
  let g1: SimNode;
  let g2: SimNode;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout;
  const gateway = () => sh(g1, "cat ~/gw/models.yaml 2>/dev/null || true");
  /** g2 has the seed-001 script recipe, bound to its loopback (the gateway on g1 cannot reach it). */
  const scriptNode = (n: SimNode) =>
    [
      `      vars: { tritonCache: ${n.home}/triton, mtpShardR2: ${n.home}/mtp-r2, captureDir: ${n.home}/capture }`,
      "      recipes:",
      "        qwen38-flash: { dir: ~/flash, container: qwen38-flash }",
    ].join("\n");
  const stack = (deployments: string[]) =>
    [
      "config:",
      `  sm121:knownHosts: ${e.site.knownHosts}`,
      "  sm121:minMemAvailableGiB: 1",
      "  sm121:readyGraceS: 0",
      "  sm121:gateway: { path: ~/gw/models.yaml, format: litellm, node: g1 }",
      nodesYaml(
        e.site,
        (n) => (n.name === "g2" ? scriptNode(n) : ""),
        (n): Record<string, string> => {
          return n.name === "g2" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {};
        },
      ),
      "  sm121:deployments:",
      ...deployments.map((d) => `    - ${d}`),
      "",
    ].join("\n");
  const both = () =>
    stack([
      "{ name: a, recipe: alpha, nodes: [g1] }",
      "{ name: flash, recipe: qwen38-flash, profile: best, nodes: [g2] }",
    ]);
  type Resource = { urn: string; outputs?: { outcome?: { status: string; failure?: string } } };
  const resources = async () => {
    const exported = (await e.pulumi.run(["stack", "export"])).stdout;
    return (JSON.parse(exported) as { deployment: { resources?: Resource[] } }).deployment.resources ?? [];
  };

  beforeAll(async () => {
    if (!existsSync(LITELLM_PYTHON)) {
      throw new Error(`${LITELLM_PYTHON} is missing: scripts/venvs.sh (run by scripts/setup.sh) installs it`);
    }
    e = await e2eProject({
      name: "weekgw",
      nodes: ["g1", "g2"],
      ...AT.site(),
      recipes: { "alpha.toml": recipe("alpha", 8000, "0.4"), "gamma.toml": recipe("gamma", 8001, "0.4") },
      prepare: (site) => {
        const n = site.nodes[1] as SimNode;
        makeScriptRecipe(n, "flash");
        mkdirSync(join(n.home, "mtp-r2"), { recursive: true });
      },
      config: () => "",
    });
    [g1, g2] = e.site.nodes as [SimNode, SimNode];
    e.writeStack(both());
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 240_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("writes the gateway file again when it was edited or deleted on its node, and the plan says why", async () => {
    const written = await gateway();
    expect(litellmDeployments(written)).toEqual(["a-g1"]);
    await sh(g1, "printf '# a hand edit\\n' >> ~/gw/models.yaml");
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    const sums = /\(sha256 [0-9a-f]{12} -> [0-9a-f]{12}\)/.source;
    const changed = `sm121: gateway: the file g1:~/gw/models\\.yaml was changed since sm121 wrote it ${sums}`;
    expect(preview.all).toMatch(new RegExp(`${changed}; this up writes it again, after a backup`));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await gateway()).toBe(written);
    expect(await sh(g1, "cat ~/gw/models.yaml.sm121-bak-*")).toBe(`${written}# a hand edit\n`);

    await sh(g1, "rm ~/gw/models.yaml");
    const removed = await e.preview();
    expect(removed.code, removed.all).toBe(0);
    expect(removed.all).toContain(
      "sm121: gateway: the file g1:~/gw/models.yaml was removed since sm121 wrote it; this up writes it again",
    );
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(await gateway()).toBe(written);
  }, 360_000);

  it("keeps a downed deployment's endpoint in the file, disabled (commented out), until it stopped", async () => {
    const down = await e.up({ SM121_DOWN: "a" });
    expect(down.code, down.all).toBe(0);
    const file = await gateway();
    const why = "the deployment was removed from the site; sm121 stops it";
    expect(file).toContain(`# disabled: alpha on g1 (http://${g1.ip}:8000): ${why}\n#   - model_name: alpha\n`);
    expect(litellmDeployments(file)).toEqual([]);
    expect(await sh(g1, "docker ps -q | wc -l")).toBe("0\n");
    // The next up finds nothing of a on g1 any more: its entry goes.
    const next = await e.up({ SM121_DOWN: "a" });
    expect(next.code, next.all).toBe(0);
    expect(await gateway()).not.toContain("alpha");
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
    expect(litellmDeployments(await gateway())).toEqual(["a-g1"]);
  }, 360_000);

  it("a stop that fails keeps the deployment, says which node and why, and the next destroy tries again", async () => {
    const stopSh = join(g2.home, "flash", "stop.sh");
    const good = readFileSync(stopSh, "utf8");
    const busy = "stop.sh: cannot stop qwen38-flash: device or resource busy";
    writeFileSync(stopSh, good.replace("set -euo pipefail\n", `set -euo pipefail\necho '${busy}' >&2; exit 1\n`));
    const engines = nodeProcesses(g2, /fake-engine/);
    expect(engines).toHaveLength(1);

    const destroy = await e.destroy();
    expect(destroy.code).not.toBe(0);
    expect(destroy.all).toContain(
      [
        "deployment flash: the stop failed on g2; flash stays in the stack state, marked failed on g2,",
        "and its gateway endpoints stay disabled.",
      ].join(" "),
    );
    expect(destroy.all).toContain(busy);
    expect(destroy.all).toContain(
      [
        "Fix the stop on g2 (the deployment's stop script there: ~/.sm121/deployments/flash/stop.sh),",
        "then run `pulumi destroy` again, or `pulumi up` (which tries the stop again).",
      ].join(" "),
    );
    // Nothing is reported deleted that still runs: flash stays, its engine runs, the node keeps the record.
    expect((await resources()).map((r) => r.urn.split("::").pop())).toContain("flash-engine");
    expect(nodeProcesses(g2, /fake-engine/)).toEqual(engines);
    const failedStop = await sh(g2, "cat ~/.sm121/deployments/flash/stop-failed.json");
    const record = JSON.parse(failedStop) as { at: string; lines: string };
    expect(record).toEqual({ at: matching(/^\S+Z$/), lines: `exit code 1 | ${busy}` });
    // The gateway went first and stayed: every endpoint disabled, the file in place.
    const file = await gateway();
    expect(file).toContain("the stack was destroyed");
    expect(litellmDeployments(file)).toEqual([]);

    const refresh = await e.refresh();
    expect(refresh.code, refresh.all).toBe(0);
    const flash = (await resources()).find((r) => r.urn.endsWith("::flash-engine"))?.outputs?.outcome;
    // The state keeps the node's account as found (a message whose text is said as it was recorded).
    const failure = { key: "state.asFound", args: { text: `stop failed on g2 (${record.at}): ${record.lines}` } };
    expect(flash).toMatchObject({ status: "failed", failure });
    const status = await sm121(e, ["status", "--node", "g2", "--json"]);
    const report = json(status) as { deployments: Array<{ nodes: Array<{ drift: unknown }> }> };
    const entry = report.deployments[0]?.nodes[0];
    expect(entry?.drift).toEqual({ kind: "stop-failed", files: [] });

    writeFileSync(stopSh, good);
    const retry = await e.destroy();
    expect(retry.code, retry.all).toBe(0);
    expect(nodeProcesses(g2, /fake-engine/)).toEqual([]);
    expect(await sh(g2, "ls ~/.sm121/deployments/flash/ 2>/dev/null | grep -c stop || true")).toBe("0\n");
  }, 360_000);

  it("keeps one memory budget per node: two on one node refused over-committed, served when they fit", async () => {
    writeFileSync(join(e.dir, "recipes", "alpha.toml"), recipe("alpha", 8000, "0.5"));
    writeFileSync(join(e.dir, "recipes", "gamma.toml"), recipe("gamma", 8001, "0.5"));
    e.writeStack(stack(["{ name: a, recipe: alpha, nodes: [g1] }", "{ name: c, recipe: gamma, nodes: [g1] }"]));
    const over = await e.preview();
    expect(over.code).not.toBe(0);
    expect(over.all).toContain(
      [
        "node g1 is over-committed:",
        "a claims 60.8 GiB (0.5 x 121.7 GiB (--gpu-memory-utilization in recipes/alpha.toml)) +",
        "c claims 60.8 GiB (0.5 x 121.7 GiB (--gpu-memory-utilization in recipes/gamma.toml)) =",
        "121.7 GiB > 109.5 GiB (0.9 x 121.7 GiB MemTotal; the rest is the OS's);",
        "lower the deployments' utilization so that their shares add up to at most 0.9,",
        "or move one of them to another node;",
        "SM121_ALLOW_UNFIT=g1 lets this run go on",
      ].join(" "),
    );
    const allowed = await e.preview({ SM121_ALLOW_UNFIT: "g1" });
    expect(allowed.code, allowed.all).toBe(0);
    expect(allowed.all).toContain("SM121_ALLOW_UNFIT=g1: going on although node g1 is over-committed");

    writeFileSync(join(e.dir, "recipes", "alpha.toml"), recipe("alpha", 8000, "0.4"));
    writeFileSync(join(e.dir, "recipes", "gamma.toml"), recipe("gamma", 8001, "0.4"));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toMatch(/g1 +121\.7 GiB +a 48\.7 GiB \+ c 48\.7 GiB +97\.4 GiB +fits \(limit 109\.5 GiB\)/);
    for (const port of [8000, 8001]) {
      expect(await sh(g1, `curl -s -o /dev/null -w '%{http_code}' http://${g1.ip}:${port}/v1/models`)).toBe("200");
    }
    const startedAt = await sh(g1, "docker inspect -f '{{.Name}} {{.State.StartedAt}}' sm121-a-0 sm121-c-0");
    // Neighbours are no leftovers: a plain up stops neither.
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).not.toMatch(/stops deployment|updated|created/);
    expect(await sh(g1, "docker inspect -f '{{.Name}} {{.State.StartedAt}}' sm121-a-0 sm121-c-0")).toBe(startedAt);
  }, 360_000);
});
