/**
 * The plan as the operator reads it: `pulumi preview --diff` through the real CLI on the simulated
 * site, pinned as golden files (normalized for paths, the test network and hashes) for one profile
 * key changed, one engine flag changed on a two-node deployment, a node moved to another
 * deployment, and drift on one node. Each deployment's part stays within 40 lines, the whole plan
 * within a screen, and a plan that changes nothing within a few lines. Then a stack
 * whose engines are in the nested form of earlier releases is rewritten by one up that restarts no
 * engine.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { expectGolden } from "../helpers/golden";
import { e2eProject, nodesYaml, REPO, type E2E } from "../helpers/project";
import type { PulumiRun } from "../helpers/pulumi";
import { sshScript } from "../site/exec";
import { makeScriptRecipe } from "../site/recipe";
import { setEngineProofs, type SimNode, type SimSite } from "../site/site";
import { unpack } from "../../src/providers/packed";

const AT = allocate(__filename);
/** The port spark1's engine binds on 127.0.0.1 (the node env's BIND and PORT). */
const LOOPBACK_PORT = AT.port(0);

const GOLDEN = join(REPO, "test", "golden", "plan");
const RECIPE_DIR = "spark-recipes/qwen38-flash";
const SOLO = (name: string) =>
  `engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "${name}"\n` +
  `image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n`;
const PAIR = (len: string) =>
  `engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-32B"\nserved_model_name = "qwen3-32b"\n` +
  `image = "nvcr.io/nvidia/vllm:26.01-py3"\ntp = 2\nport = 8000\n` +
  `args = ["--max-model-len", "${len}", "--gpu-memory-utilization", "0.85", "--enable-prefix-caching"]\n` +
  `[readiness]\ntimeout_s = 60\n`;
const DEPLOYMENTS = [
  "{ name: flash, recipe: qwen38-flash, profile: best, nodes: [spark1] }",
  "{ name: pair, recipe: pair, nodes: [spark2, spark3] }",
  "{ name: chat, recipe: chat, nodes: [spark4] }",
  "{ name: code, recipe: code, nodes: [spark5] }",
];
/** The most lines one deployment may take in the plan: its resource and its diagnostics. */
const MAX_LINES = 40;

function stackYaml(site: SimSite, deployments: string[]): string {
  const extra = (n: SimNode) =>
    n.name !== "spark1"
      ? ""
      : [
          `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38, mtpShardR2: ${n.home}/models/qwen38-mtp-r2, ` +
            `captureDir: ${n.home}/capture }`,
          "      recipes:",
          `        qwen38-flash: { dir: ~/${RECIPE_DIR}, container: qwen38-flash, ownedMounts: [/recipe/files, ` +
            `/recipe/mtp_draft_vocab.json] }`,
        ].join("\n");
  // start.sh answers on 127.0.0.1, which every test site shares: a port no other suite uses.
  const env = (n: SimNode): Record<string, string> =>
    n.name === "spark1" ? { BIND: "127.0.0.1", PORT: String(LOOPBACK_PORT) } : {};
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    "  sm121:gateway: { path: ~/litellm/models.yaml, format: litellm, node: spark2 }",
    nodesYaml(site, extra, env),
    "  sm121:deployments:",
    ...deployments.map((d) => `    - ${d}`),
    "",
  ].join("\n");
}

/** Pulumi's output without its heartbeat (`@ previewing update....`, printed when a run takes a while). */
function stdoutOf(run: PulumiRun): string {
  return run.stdout
    .split("\n")
    .filter((l) => !l.startsWith("@ "))
    .join("\n");
}

/**
 * The preview as a golden: this run's paths and network spelled the same every run, each hash
 * prefix named by its first appearance (so a changed file still reads as changed), Pulumi's
 * diagnostics sorted (they come from the providers in the order Pulumi diffs them).
 */
function normalized(run: PulumiRun, site: SimSite): string {
  const hashes = new Map<string, string>();
  // The nodes' addresses, not the network's prefix: a start.sh's localhost (127.0.0.1) stays.
  const nodesAt = (text: string) =>
    site.nodes.reduce((t, n) => t.replaceAll(n.ip, `10.0.0.${n.ip.split(".").pop() ?? ""}`), text);
  // The loopback port is this file's (test/site/alloc.ts), which moves when a test file comes or goes.
  const fix = (text: string) =>
    nodesAt(text.replaceAll(site.dir.replace(/\/site$/, ""), "<run>"))
      .replace(new RegExp(`\\b${LOOPBACK_PORT}\\b`, "g"), "<port>")
      // Times measured by the last up (the stack outputs' first token).
      .replace(/(readyS|ttftMs): [\d.]+/g, "$1: <n>")
      // The provider host's id is new in every stack.
      .replace(/(pulumi:providers:pulumi-nodejs::sm121::)[0-9a-f-]{36}/g, "$1<id>")
      .replace(/\b[0-9a-f]{12}\b/g, (h) => {
        if (!hashes.has(h)) hashes.set(h, `<hash ${hashes.size + 1}>`);
        return hashes.get(h) ?? h;
      });
  const diagnostics = run.stderr
    .split("\n")
    .filter((l) => l.trim() !== "")
    .sort();
  return `${fix(stdoutOf(run))}--- diagnostics (sorted)\n${diagnostics.map(fix).join("\n")}\n`;
}

/** Lines per deployment: its EngineDeployment block in the diff and its diagnostics. */
function linesPerDeployment(run: PulumiRun): Map<string, number> {
  const counts = new Map<string, number>();
  let current: string | undefined;
  // The lines of a block before its urn line names the resource.
  let pending = 0;
  for (const line of stdoutOf(run).split("\n")) {
    if (/^\s*(?:\+-|[~+-])?\s*[\w-]+:[\w/-]+:\w+: \(/.test(line) || /^\s*(--outputs:--|Resources:)/.test(line)) {
      current = undefined;
      pending = 0;
    }
    const urn = /EngineDeployment::(.+)-engine\]$/.exec(line);
    if (urn?.[1] !== undefined) {
      current = urn[1];
      counts.set(current, (counts.get(current) ?? 0) + pending);
    }
    if (current !== undefined) counts.set(current, (counts.get(current) ?? 0) + 1);
    else pending++;
  }
  for (const [d, n] of counts)
    counts.set(d, n + run.stderr.split("\n").filter((l) => l.startsWith(`sm121: ${d}: `)).length);
  return counts;
}

/**
 * The whole plan of a change to one deployment fits one screen: the memory fit of what stays as
 * it is takes one line, and each deployment is its own stack output (a changed object output is
 * printed whole, every deployment in it).
 */
const SCREEN = 60;

function expectPlan(name: string, run: PulumiRun, site: SimSite, most = SCREEN): void {
  expect(run.code, run.all).toBe(0);
  const plan = normalized(run, site);
  expectGolden(join(GOLDEN, `${name}.txt`), plan, "test/e2e/plan.test.ts");
  expect(
    plan.trimEnd().split("\n").length,
    `the plan of ${name} takes more than ${most} lines:\n${plan}`,
  ).toBeLessThanOrEqual(most);
  for (const [deployment, lines] of linesPerDeployment(run))
    expect(lines, `${deployment} takes ${lines} lines of the plan:\n${run.all}`).toBeLessThanOrEqual(MAX_LINES);
}

describe.sequential("the plan in one screen", () => {
  let e: E2E;
  let profile: string;
  const node = (i: number) => e.site.nodes[i] as SimNode;
  const started = async () =>
    Promise.all(
      e.site.nodes.map(
        async (n) =>
          (
            await sshScript(
              e.site,
              n,
              "for c in $(docker ps --format '{{.Names}}'); " +
                'do echo "$c $(docker inspect -f \'{{.State.StartedAt}}\' "$c")"; done',
            )
          ).stdout,
      ),
    );

  beforeAll(async () => {
    e = await e2eProject({
      name: "plan",
      nodes: ["spark1", "spark2", "spark3", "spark4", "spark5"],
      ...AT.site(),
      config: () => "",
      recipes: { "chat.toml": SOLO("chat"), "code.toml": SOLO("code"), "pair.toml": PAIR("32768") },
    });
    makeScriptRecipe(node(0), RECIPE_DIR);
    mkdirSync(join(node(0).home, "models", "qwen38-mtp-r2"), { recursive: true });
    setEngineProofs(node(0), ["MTP draft head: FP8 rowwise copy engaged"]);
    e.writeStack(stackYaml(e.site, DEPLOYMENTS));
    profile = join(e.dir, "recipes", "qwen38-flash", "profiles", "best.env");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("says in a few lines that nothing changes, the memory fit of what serves as declared in one", async () => {
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.stdout).toMatch(/^ {4}12 unchanged$/m);
    const said = preview.stderr.split("\n").filter((l) => l.trim() !== "");
    const steady = "flash, pair, chat, code run as declared on their nodes";
    expect(said).toEqual([`memory fit: ${steady} (sm121 doctor shows their fit)`]);
    expect(stdoutOf(preview).trimEnd().split("\n").length, preview.stdout).toBeLessThanOrEqual(12);
    // SM121_RESTART=1 starts every deployment again: each shows its fit (here unknown, in words).
    const restart = await e.preview({ SM121_RESTART: "1" });
    expect(restart.code, restart.all).toBe(0);
    for (const d of ["flash", "pair", "chat", "code"])
      expect(restart.stderr).toContain(`memory fit of ${d} is unknown: `);
    expect(restart.stderr).not.toContain("as declared on their nodes");
  });

  it("shows one changed profile key as its .env line, the file's new sha256 and why it restarts", async () => {
    const text = readFileSync(profile, "utf8");
    writeFileSync(profile, text.replace("MAX_NUM_SEQS=4", "MAX_NUM_SEQS=6"));
    const preview = await e.preview();
    writeFileSync(profile, text);
    expect(preview.stdout).toMatch(/- \.env MAX_NUM_SEQS=4\n\s+\+ \.env MAX_NUM_SEQS=6\n/);
    expectPlan("profile-key", preview, e.site);
  });

  it("shows a changed engine flag once for both nodes, whole; a plain preview, one line per resource", async () => {
    writeFileSync(join(e.dir, "recipes", "pair.toml"), PAIR("16384"));
    const preview = await e.preview();
    const plain = await e.pulumi.run(["preview"]);
    writeFileSync(join(e.dir, "recipes", "pair.toml"), PAIR("32768"));
    expect(preview.stdout).toMatch(/- --max-model-len 32768\n\s+\+ --max-model-len 16384\n/);
    expect(preview.stderr).toContain("sm121: pair: restarts spark2, spark3: the rendered bundle changed");
    expectPlan("engine-flag", preview, e.site);
    expect(plain.code, plain.all).toBe(0);
    // No diff of any input (the memory fit's lines name the flag, not its change).
    expect(plain.stdout).not.toMatch(/[-+] --max-model-len/);
    expect(plain.stdout.split("\n").filter((l) => l.includes("pair-engine"))).toHaveLength(1);
  });

  it("shows a node moved to another deployment: the old one deleted, the new one replaced on it", async () => {
    e.writeStack(
      stackYaml(e.site, [DEPLOYMENTS[0] ?? "", DEPLOYMENTS[1] ?? "", "{ name: code, recipe: code, nodes: [spark4] }"]),
    );
    const preview = await e.preview();
    e.writeStack(stackYaml(e.site, DEPLOYMENTS));
    // The input holds the finding in English words (never a message key), the same in every language.
    expect(preview.stdout).toContain('+ [0]: "spark4: stops deployment chat first (the node now serves code)"');
    expect(preview.stdout).not.toContain("serve.look");
    expect(preview.stdout).toMatch(/- chat from chat on spark4 .* enabled\n/);
    // Two deployments change here, and one is deleted: its outputs are shown going away.
    expectPlan("node-moved", preview, e.site, 2 * SCREEN);
  });

  it("shows drift found on one node as the reason to restart its group", async () => {
    await sshScript(e.site, node(4), "docker stop sm121-code-0 >/dev/null");
    const preview = await e.preview();
    // The drift input holds the finding in words: why the engine does not run among them.
    expect(preview.stdout).toContain('+ [0]: "spark5: the engine is not running (container exited)"');
    expect(preview.stderr).toContain(
      "sm121: code: restarts spark5: spark5: the engine is not running (container exited)",
    );
    expectPlan("drift", preview, e.site);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
  });

  it("rewrites a stack of the nested form with one up that restarts no engine", async () => {
    interface StateResource {
      type: string;
      inputs?: Record<string, unknown>;
      outputs?: Record<string, unknown>;
    }
    const exported = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: StateResource[] };
    };
    // The form the previous release wrote for an engine: the bundle nested, the run's settings beside
    // it, no state version (test/e2e/state-upgrade.test.ts imports whole stacks that release wrote).
    const nested = (p: Record<string, unknown>): Record<string, unknown> => {
      const {
        plan: _p,
        __bundle,
        __run,
        stateVersion: _v,
        ...rest
      } = p as {
        plan: string;
        __bundle: string;
        __run: Record<string, unknown>;
        stateVersion: number;
      };
      const bundle = unpack<{ nodes: Array<Record<string, unknown>> }>(__bundle);
      for (const n of bundle.nodes) delete n["image"];
      return { ...rest, ...__run, bundle };
    };
    for (const r of exported.deployment.resources.filter((x) => x.type.endsWith(":EngineDeployment"))) {
      if (r.inputs !== undefined) r.inputs = nested(r.inputs);
      if (r.outputs !== undefined) r.outputs = nested(r.outputs);
    }
    const file = join(e.dir, "..", "nested-state.json");
    writeFileSync(file, JSON.stringify(exported));
    expect((await e.pulumi.run(["stack", "import", "--file", file])).code).toBe(0);
    const before = await started();
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(
      "the EngineDeployment state is rewritten from the unversioned form of version 1 to version 6",
    );
    expect(await started(), up.all).toEqual(before);
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).not.toMatch(/updated|created|replaced/);
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: StateResource[] };
    };
    for (const r of state.deployment.resources.filter((x) => x.type.endsWith(":EngineDeployment")))
      expect(typeof r.outputs?.["__bundle"]).toBe("string");
  });
});
