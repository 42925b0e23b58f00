/**
 * `sm121 render` at site scale: a generated project with 100 nodes and 50 deployments (solo and
 * tp4 vLLM, vLLM tp2, SGLang tp2, gr8 tp4), rendered in-process (loadProject, renderSite) and
 * through the CLI (`render <one> --json`, `validate`), each output checked.
 */
import { spawn } from "node:child_process";
import { cpSync, mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { renderSchema } from "../src/cli/schemas";
import { loadProject } from "../src/project";
import { renderSite } from "../src/render/deployment";
import { REPO } from "../test/helpers/project";
import { BENCH_RECIPES } from "./lib/recipes";
import { median, say } from "./lib/util";

const MIX: Array<[recipe: string, count: number, size: number]> = [
  ["bench-solo", 20, 1],
  ["qwen3-32b-vllm-tp2", 15, 2],
  ["qwen3-30b-sglang-tmux", 5, 2],
  ["glm53-full-tp4-gr8", 5, 4],
  ["bench-tp4", 5, 4],
];

function siteYaml(): { yaml: string; deployments: string[]; nodes: number } {
  const lines = ["config:", "  sm121:knownHosts: ~/.ssh/known_hosts", "  sm121:nodes:"];
  const total = MIX.reduce((n, [, c, s]) => n + c * s, 0);
  for (let i = 1; i <= total; i++) {
    const name = `n${String(i).padStart(3, "0")}`;
    const ip = `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`;
    lines.push(
      `    ${name}:`,
      `      ssh: { host: ${ip}, user: ops }`,
      `      ip: ${ip}`,
      "      env: { HF_HOME: /home/ops/.cache/huggingface }",
    );
  }
  lines.push("  sm121:deployments:");
  const deployments: string[] = [];
  let next = 1;
  for (const [recipe, count, size] of MIX) {
    for (let k = 0; k < count; k++) {
      const name = `d${String(deployments.length + 1).padStart(2, "0")}`;
      const nodes = Array.from({ length: size }, () => `n${String(next++).padStart(3, "0")}`);
      lines.push(`    - { name: ${name}, recipe: ${recipe}, nodes: [${nodes.join(", ")}] }`);
      deployments.push(name);
    }
  }
  return { yaml: `${lines.join("\n")}\n`, deployments, nodes: total };
}

function cli(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(process.execPath, args, {
      cwd,
      env: { ...process.env, SM121_PROJECT: cwd },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: performance.now() - t0 }));
  });
}

export interface RenderResult {
  deployments: number;
  nodes: number;
  inProcessLoadProjectMs: number[];
  inProcessRenderSiteMs: number[];
  cliNodeStartMs: number[];
  cliHelpMs: number[];
  cliRenderOneJsonMs: number[];
  cliValidateMs: number[];
  medians: {
    loadProject: number;
    renderSite: number;
    nodeStart: number;
    cliHelp: number;
    renderOneJson: number;
    validate: number;
  };
  checked: string;
}

export async function measureRender(runs: number): Promise<RenderResult> {
  const dir = `/tmp/sm121-bench-render-${process.pid}`;
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    cpSync(join(REPO, "Pulumi.yaml"), join(dir, "Pulumi.yaml"));
    cpSync(join(REPO, "recipes"), join(dir, "recipes"), { recursive: true });
    for (const [f, text] of Object.entries(BENCH_RECIPES())) writeFileSync(join(dir, "recipes", f), text);
    const site = siteYaml();
    writeFileSync(join(dir, "Pulumi.bench.yaml"), site.yaml);
    say(`render: ${site.deployments.length} deployments over ${site.nodes} nodes, in-process x${runs * 2}`);
    const lp: number[] = [];
    const rs: number[] = [];
    for (let i = 0; i < runs * 2; i++) {
      const t0 = performance.now();
      const p = loadProject(dir, "bench");
      lp.push(performance.now() - t0);
      if (p.bundles.length !== site.deployments.length)
        throw new Error(`render: ${p.bundles.length} bundles, expected ${site.deployments.length}`);
      const t1 = performance.now();
      renderSite(p.site, p.recipes, { root: dir });
      rs.push(performance.now() - t1);
    }
    say(`render: through the CLI x${runs}`);
    const bin = join(REPO, "bin", "sm121");
    const ns: number[] = [];
    const help: number[] = [];
    const one: number[] = [];
    const val: number[] = [];
    const pick = site.deployments[site.deployments.length - 1] ?? "d50";
    let checked = "";
    for (let i = 0; i < runs; i++) {
      ns.push((await cli(["-e", "0"], dir)).ms);
      help.push((await cli([bin, "--help"], dir)).ms);
      const r = await cli([bin, "render", pick, "--json", "--stack", "bench"], dir);
      if (r.code !== 0) throw new Error(`sm121 render ${pick} --json failed: ${r.stderr}`);
      const parsed = renderSchema().safeParse(JSON.parse(r.stdout));
      if (!parsed.success)
        throw new Error(
          `sm121 render ${pick} --json does not match renderSchema: ${parsed.error.message.slice(0, 500)}`,
        );
      const j = parsed.data;
      if (j.deployment !== pick || j.nodes.length !== 4 || j.nodes.some((n) => n.files.length === 0))
        throw new Error(`sm121 render ${pick} --json: unexpected output ${r.stdout.slice(0, 300)}`);
      one.push(r.ms);
      const v = await cli([bin, "validate", "--stack", "bench"], dir);
      if (v.code !== 0 || !v.stdout.includes(`${site.deployments.length} deployments`))
        throw new Error(`sm121 validate failed: ${v.stdout}${v.stderr}`);
      val.push(v.ms);
      checked =
        `render ${pick} --json (renderSchema ok): ${j.nodes.length} nodes, ` +
        `${j.nodes.reduce((n, x) => n + x.files.length, 0)} files; validate: ${v.stdout.trim().slice(0, 60)}...`;
    }
    const m = (xs: number[]) => Math.round(median(xs) * 10) / 10;
    const r1 = (xs: number[]) => xs.map((x) => Math.round(x * 10) / 10);
    return {
      deployments: site.deployments.length,
      nodes: site.nodes,
      inProcessLoadProjectMs: r1(lp),
      inProcessRenderSiteMs: r1(rs),
      cliNodeStartMs: r1(ns),
      cliHelpMs: r1(help),
      cliRenderOneJsonMs: r1(one),
      cliValidateMs: r1(val),
      medians: {
        loadProject: m(lp),
        renderSite: m(rs),
        nodeStart: m(ns),
        cliHelp: m(help),
        renderOneJson: m(one),
        validate: m(val),
      },
      checked,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
