/**
 * Golden renders of every example recipe, deployed at once on the site
 * test/fixtures/sites/examples.yaml. Per deployment and node under test/golden/<deployment>/:
 *   <node>.txt       the exact text of `sm121 render <deployment> --node <node>`
 *   <node>.json      renderJson (what `--json` prints): argv, launch, env, every file byte for byte
 *   <node>.plan.txt  what the render does not print: status/logs scripts, preflight, mkdirs,
 *                    memory gate, endpoint, readiness, hooks and the identities
 * and the DGPP provisioning script. Update with UPDATE_GOLDEN=1 and review the diff.
 */
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli/args";
import { renderCommand, renderJson } from "../src/cli/render";
import { flagSpec } from "../src/cli/usage";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { dgppBuildScript } from "../src/dgpp/files.render";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";
import { expectGolden, firstDifference } from "./helpers/golden";

const ROOT = join(__dirname, "..");
const FIXTURE = join(__dirname, "fixtures", "sites", "examples.yaml");
const GOLDEN = join(__dirname, "golden");

const site = readSite(FIXTURE, "examples", "Pulumi.examples.yaml");
const recipes = loadRecipes(join(ROOT, "recipes"), "recipes");
const bundles = renderSite(site, recipes, { root: ROOT });
const pairs = bundles.flatMap((b) => b.nodes.map((n): [string, string] => [b.deployment, n.node]));

function bundleOf(deployment: string): DeploymentBundle {
  const b = bundles.find((x) => x.deployment === deployment);
  if (b === undefined) throw new Error(`no deployment ${deployment}`);
  return b;
}

function nodeOf(deployment: string, node: string): NodeBundle {
  const n = bundleOf(deployment).nodes.find((x) => x.node === node);
  if (n === undefined) throw new Error(`no node ${node} in ${deployment}`);
  return n;
}

/** A project directory for the CLI: the fixture as Pulumi.examples.yaml beside the real recipes. */
const project = mkdtempSync(join(tmpdir(), "sm121-golden-"));
copyFileSync(FIXTURE, join(project, "Pulumi.examples.yaml"));
symlinkSync(join(ROOT, "recipes"), join(project, "recipes"));
afterAll(() => rmSync(project, { recursive: true, force: true }));

/** What `sm121 render <args> --stack examples` prints, run in-process against the fixture. */
function cli(args: string[]): string {
  const out: string[] = [];
  const err: string[] = [];
  const parsed = parseArgs([...args, "--stack", "examples"], flagSpec("render"));
  const code = renderCommand(
    { root: project, stack: "examples", out: (l) => out.push(l), err: (l) => err.push(l) },
    parsed,
  );
  if (code !== 0) throw new Error(`render exited ${code}: ${err.join("\n")}`);
  return out.map((l) => `${l}\n`).join("");
}

function planText(b: DeploymentBundle, n: NodeBundle): string {
  const r = b.readiness;
  const lines = [
    `# ${b.deployment} on ${n.node}: what sm121 render does not print`,
    `deployment identity: ${b.identity}`,
    `node identity: ${n.identity}`,
    `runnable: ${b.runnable}  rollback: ${b.rollback}  memTimeoutS: ${b.memTimeoutS}`,
    `readiness: timeoutS=${r.timeoutS} servedName=${r.servedName ?? "-"} maxModelLen=${r.maxModelLen ?? "-"} ` +
      `kvCachePattern=${r.kvCachePattern ?? "-"}`,
    ...r.proofs.map((p) => `proof: ${p}`),
    ...b.hooks.beforeServe.map((h) => `hook before_serve: ${h}`),
    ...b.hooks.afterStop.map((h) => `hook after_stop: ${h}`),
    ...b.clientNotes.map((c) => `client note: ${c}`),
    ...b.warnings.map((w) => `warning: ${w}`),
    `conn: ${n.conn.kind} ${n.conn.user}@${n.conn.host}:${n.conn.port}  ip: ${n.ip}  protected: ` +
      `${n.protected}  runs: ${n.runs}`,
    `api: ${n.api?.url ?? "-"}`,
    `stateDir: ${n.stateDir}`,
    `memGateGiB: ${n.memGateGiB}`,
    ...n.mkdirs.map((d) => `mkdir: ${d}`),
    ...n.files.map((f) => `file: ${f.path} mode=${f.mode.toString(8)} backup=${f.backup} sha256=${f.sha256}`),
    ...n.preflight.map((c) => `preflight ${c.kind}${c.fatal ? "" : " (warning)"}: ${c.subject} -- ${c.why}`),
    ...(n.envKeys === undefined ? [] : Object.entries(n.envKeys).map(([k, v]) => `envKey: ${k}=${v}`)),
    "--- status",
    n.status,
    "--- logs",
    n.logs,
    "",
  ];
  return lines.join("\n");
}

describe("the examples site", () => {
  it("deploys every example recipe at once, on disjoint nodes", () => {
    expect(bundles.map((b) => [b.deployment, b.nodes.map((n) => n.node)])).toEqual([
      ["glm53-full-tp4-gr8", ["gr8-1", "gr8-2", "gr8-3", "gr8-4"]],
      ["qwen38-27b-nvfp4-dgpp", ["dgpp-1", "dgpp-2"]],
      ["qwen3-32b-vllm-tp2", ["vllm-1", "vllm-2"]],
      ["qwen3-30b-sglang-tmux", ["sglang-1", "sglang-2"]],
      ["qwen38-flash-best", ["flash-best"]],
      ["qwen38-flash-datagen", ["flash-datagen"]],
      ["qwen38-flash-capture", ["flash-capture"]],
      ["qwen3-8b-solo", ["solo-1"]],
    ]);
    expect(new Set(bundles.map((b) => b.recipe))).toEqual(new Set(recipes.keys()));
    expect(new Set(pairs.map(([, n]) => n)).size).toBe(pairs.length);
  });

  it("has goldens for exactly these deployments (none stale)", () => {
    if (process.env["UPDATE_GOLDEN"] === "1") return;
    // test/golden/plan/ holds the `pulumi preview --diff` goldens (test/e2e/plan.test.ts), fabric/
    // the fabric's (test/fabric-golden.test.ts).
    expect(
      readdirSync(GOLDEN)
        .filter((d) => d !== "plan" && d !== "fabric")
        .sort(),
    ).toEqual(bundles.map((b) => b.deployment).sort());
    for (const b of bundles) {
      const expected = [
        ...b.nodes.flatMap((n) => [`${n.node}.json`, `${n.node}.plan.txt`, `${n.node}.txt`]),
        ...(b.engine === "dgpp" ? ["provision.sh"] : []),
      ];
      expect(readdirSync(join(GOLDEN, b.deployment)).sort()).toEqual(expected.sort());
    }
  });
});

describe.each(pairs)("golden %s on %s", (deployment, node) => {
  const dir = join(GOLDEN, deployment);

  it("sm121 render text", () => {
    expectGolden(join(dir, `${node}.txt`), cli([deployment, "--node", node]));
  });

  it("renderJson, the same as `sm121 render --json`", () => {
    const json = `${JSON.stringify(renderJson(bundleOf(deployment), [nodeOf(deployment, node)]), null, 2)}\n`;
    expect(cli([deployment, "--node", node, "--json"])).toBe(json);
    expectGolden(join(dir, `${node}.json`), json);
  });

  it("plan details", () => {
    expectGolden(join(dir, `${node}.plan.txt`), planText(bundleOf(deployment), nodeOf(deployment, node)));
  });
});

describe("DGPP provisioning", () => {
  it("the build script of qwen38-27b-nvfp4-dgpp", () => {
    const r = recipes.get("qwen38-27b-nvfp4-dgpp");
    if (r === undefined) throw new Error("recipe qwen38-27b-nvfp4-dgpp is missing");
    expectGolden(join(GOLDEN, "qwen38-27b-nvfp4-dgpp", "provision.sh"), dgppBuildScript(r));
  });
});

describe.skipIf(process.env["UPDATE_GOLDEN"] === "1")("expectGolden", () => {
  it("passes on identical bytes and fails on one changed byte, naming the line and the update command", () => {
    const f = join(project, "one.golden");
    writeFileSync(f, "a\nb\n");
    expect(() => expectGolden(f, "a\nb\n")).not.toThrow();
    expect(() => expectGolden(f, "a\nc\n")).toThrow(
      /line 2:\n {2}golden: "b"\n {2}actual: "c"\); if the change is intended, run UPDATE_GOLDEN=1 npx vitest run /,
    );
    expect(() => expectGolden(f, "a\nb")).toThrow(/line 3:\n {2}golden: ""\n {2}actual: "<end of file>"/);
    expect(readFileSync(f, "utf8")).toBe("a\nb\n");
  });

  it("fails on a missing golden file", () => {
    expect(() => expectGolden(join(project, "absent.golden"), "x")).toThrow(
      /absent\.golden does not exist; if the change is intended, run UPDATE_GOLDEN=1/,
    );
  });

  it("firstDifference reports bytes that split() hides", () => {
    expect(firstDifference("a\n", "a\n")).toBe("the texts differ only in bytes that split() does not show");
  });
});
