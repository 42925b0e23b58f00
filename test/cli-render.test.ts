/**
 * The compiled CLI, spawned as an operator runs it: `sm121 render` and `sm121 validate` on the
 * example project and on broken copies of it (SM121_PROJECT points at a temp directory).
 */
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const ROOT = join(__dirname, "..");
const FIXTURES = join(__dirname, "fixtures");
const temps: string[] = [];

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function sm121(args: string[], project?: string): Run {
  const env: NodeJS.ProcessEnv = { ...process.env };
  delete env["SM121_STACK"];
  delete env["PULUMI_STACK"];
  if (project === undefined) delete env["SM121_PROJECT"];
  else env["SM121_PROJECT"] = project;
  const r = spawnSync(process.execPath, [join(ROOT, "bin", "sm121"), ...args], { cwd: ROOT, env, encoding: "utf8" });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** A copy of the project's recipes beside `stackFile` as Pulumi.<stack>.yaml. */
function projectCopy(stack: string, stackFile: string, extraRecipes: string[] = []): string {
  const dir = mkdtempSync(join(tmpdir(), "sm121-cli-"));
  temps.push(dir);
  cpSync(join(ROOT, "recipes"), join(dir, "recipes"), { recursive: true });
  for (const r of extraRecipes) cpSync(join(FIXTURES, "recipes", r), join(dir, "recipes", r));
  cpSync(stackFile, join(dir, `Pulumi.${stack}.yaml`));
  return dir;
}

beforeAll(() => {
  // npm test builds dist/ first; a build here would rewrite it under suites that are running.
  if (!existsSync(join(ROOT, "dist", "src", "cli", "main.js")))
    throw new Error("dist/ is missing: run `npm run build` (npm test does)");
});

afterAll(() => {
  for (const d of temps) rmSync(d, { recursive: true, force: true });
});

const PEERS = "203.0.113.1,203.0.113.2,203.0.113.3,203.0.113.4";

describe("sm121 render glm53-full-tp4-gr8 --json --stack examples", () => {
  interface JsonNode {
    node: string;
    rank: number;
    host: string;
    argv: string[];
    launch: string;
    env: Record<string, string>;
  }
  let run: Run;
  let nodes: JsonNode[] = [];
  beforeAll(() => {
    run = sm121(
      ["render", "glm53-full-tp4-gr8", "--json", "--stack", "examples"],
      projectCopy("examples", join(FIXTURES, "sites", "examples.yaml")),
    );
    nodes = (JSON.parse(run.stdout) as { nodes: JsonNode[] }).nodes;
  });

  it("exits 0 and prints the deployment", () => {
    expect([run.code, run.stderr]).toEqual([0, ""]);
    expect(JSON.parse(run.stdout)).toMatchObject({
      deployment: "glm53-full-tp4-gr8",
      engine: "gr8",
      deploy: "docker",
      shape: "per-node",
    });
  });

  it("has the four nodes in rank order", () => {
    expect(nodes.map((n) => [n.node, n.rank, n.host])).toEqual([
      ["gr8-1", 0, "ops@203.0.113.1:22"],
      ["gr8-2", 1, "ops@203.0.113.2:22"],
      ["gr8-3", 2, "ops@203.0.113.3:22"],
      ["gr8-4", 3, "ops@203.0.113.4:2222"],
    ]);
  });

  it.each([0, 1, 2, 3])("rank %i runs `/opt/gr8/gr8 glm53 up --model M --tp 4 --peers ip0,...`", (rank) => {
    expect(nodes[rank]?.argv).toEqual([
      "/opt/gr8/gr8",
      "glm53",
      "up",
      "--model",
      "zai-org/GLM-5.3-FP8",
      "--tp",
      "4",
      "--peers",
      PEERS,
      "--model-cache",
      "/models",
      "--drafter",
      "mtp-k4",
      "--shape",
      "full",
    ]);
    expect(nodes[rank]?.launch).toContain(
      "--entrypoint /opt/gr8/gr8 \\\n  ghcr.io/kindlingai/gr8:0.9.2 \\\n" +
        `  glm53 up --model zai-org/GLM-5.3-FP8 --tp 4 --peers ${PEERS} `,
    );
  });

  it.each([0, 1, 2, 3])("rank %i has no --host, --port or --headless, in argv or launch", (rank) => {
    const n = nodes[rank];
    for (const f of ["--host", "--port", "--headless"]) {
      expect(n?.argv).not.toContain(f);
      expect(n?.launch.split(/\s+/)).not.toContain(f);
    }
    expect(n?.env).toEqual({ HF_HOME: "/root/.cache/huggingface" });
  });
});

describe("sm121 render errors", () => {
  it("an unknown deployment exits 2 with the list of deployments", () => {
    expect(sm121(["render", "nope", "--stack", "spark-site"])).toEqual({
      code: 2,
      stdout: "",
      stderr: 'no deployment "nope" in Pulumi.spark-site.yaml; deployments: qwen3-8b-solo\n',
    });
  });

  it("an unknown node exits 2 with the deployment's nodes", () => {
    expect(sm121(["render", "qwen3-8b-solo", "--node", "spark9", "--stack", "spark-site"])).toEqual({
      code: 2,
      stdout: "",
      stderr: 'deployment qwen3-8b-solo has no node "spark9"; its nodes: spark1\n',
    });
  });

  it("an unknown option exits 2", () => {
    const r = sm121(["render", "glm53-full-tp4-gr8", "--jsn"]);
    expect(r.code).toBe(2);
    // The flag, then the verb's usage: what it does take.
    expect(r.stderr.split("\n").slice(0, 4)).toEqual([
      "sm121 render: unknown option --jsn (known: --stack, --lang, --help, --node, --step, --json, --out)",
      "",
      "usage: sm121 render <deployment> [options]",
      expect.any(String),
    ]);
    expect(r.stderr).toContain(
      "\n  --step NAME  only this step: preflight, stop, memory-gate, write, start, readiness or verify\n",
    );
  });
});

describe("sm121 render --out DIR", () => {
  const examples = (): string => projectCopy("examples", join(FIXTURES, "sites", "examples.yaml"));

  it("writes per node the files under their node paths and a script per step of up, and status", () => {
    const project = examples();
    const out = join(project, "out");
    const r = sm121(["render", "qwen3-30b-sglang-tmux", "--stack", "examples", "--out", out], project);
    expect([r.code, r.stdout, r.stderr]).toEqual([0, `wrote ${join(out, "qwen3-30b-sglang-tmux")}\n`, ""]);
    const base = join(out, "qwen3-30b-sglang-tmux");
    expect(readdirSync(base).sort()).toEqual(["bundle.json", "sglang-1", "sglang-2"]);
    expect(readdirSync(join(base, "sglang-1")).sort()).toEqual([
      "files",
      "memory-gate.sh",
      "preflight.sh",
      "readiness.sh",
      "start.sh",
      "status.sh",
      "stop.sh",
      "verify.sh",
      "write.sh",
    ]);
    const bundle = JSON.parse(readFileSync(join(base, "bundle.json"), "utf8")) as {
      nodes: Array<{ node: string; files: Array<{ path: string; content: string }> }>;
    };
    expect(bundle.nodes.map((n) => n.files.map((f) => f.path))).toEqual([
      ["~/.sm121/deployments/qwen3-30b-sglang-tmux/run.sh", "~/.sm121/deployments/qwen3-30b-sglang-tmux/tripwire.sh"],
      [
        "/var/lib/sm121/deployments/qwen3-30b-sglang-tmux/run.sh",
        "/var/lib/sm121/deployments/qwen3-30b-sglang-tmux/tripwire.sh",
      ],
    ]);
    const run1 = join(base, "sglang-1", "files", "home", ".sm121", "deployments", "qwen3-30b-sglang-tmux", "run.sh");
    const run2 = join(
      base,
      "sglang-2",
      "files",
      "var",
      "lib",
      "sm121",
      "deployments",
      "qwen3-30b-sglang-tmux",
      "run.sh",
    );
    expect(readFileSync(run1, "utf8")).toBe(bundle.nodes[0]?.files[0]?.content);
    expect(readFileSync(run2, "utf8")).toBe(bundle.nodes[1]?.files[0]?.content);
    expect(statSync(run1).mode & 0o777).toBe(0o755);
    const start = readFileSync(join(base, "sglang-2", "start.sh"), "utf8");
    expect(start.split("\n").slice(0, 3)).toEqual([
      "#!/usr/bin/env bash",
      "# qwen3-30b-sglang-tmux on sglang-2 (rank 1); run as: bash -s < start.sh",
      "set -euo pipefail",
    ]);
    // The memory tripwire's lines come first, then the engine's own.
    expect(start.split("\n")).toContain("tmux kill-session -t sm121-qwen3-30b-sglang-tmux-1 2>/dev/null || true");
    expect(statSync(join(base, "sglang-2", "stop.sh")).mode & 0o777).toBe(0o755);
  });

  it("with --node writes only that node", () => {
    const project = examples();
    const out = join(project, "out");
    expect(
      sm121(["render", "qwen38-27b-nvfp4-dgpp", "--stack", "examples", "--node", "dgpp-2", "--out", out], project).code,
    ).toBe(0);
    const base = join(out, "qwen38-27b-nvfp4-dgpp");
    expect(readdirSync(base).sort()).toEqual(["bundle.json", "dgpp-2"]);
    expect(readFileSync(join(base, "dgpp-2", "files", "home", "dgpp", ".env"), "utf8")).toContain(
      'DGPP_NODES="203.0.113.11 203.0.113.12"\n',
    );
    expect(readFileSync(join(base, "dgpp-2", "start.sh"), "utf8").endsWith("set -euo pipefail\n:\n")).toBe(true);
  });
});

describe("sm121 validate", () => {
  it("exits 0 on the example project", () => {
    expect(sm121(["validate", "--stack", "spark-site"])).toEqual({
      code: 0,
      stdout: "ok: 6 recipes, 4 profiles, 2 nodes, 1 deployment (qwen3-8b-solo)\n",
      stderr: "",
    });
  });

  it("exits 0 on every example recipe deployed at once", () => {
    const project = projectCopy("examples", join(FIXTURES, "sites", "examples.yaml"));
    expect(sm121(["validate", "--stack", "examples"], project)).toEqual({
      code: 0,
      stdout:
        "ok: 6 recipes, 4 profiles, 14 nodes, 8 deployments (glm53-full-tp4-gr8, qwen38-27b-nvfp4-dgpp, " +
        "qwen3-32b-vllm-tp2, qwen3-30b-sglang-tmux, qwen38-flash-best, qwen38-flash-datagen, " +
        "qwen38-flash-capture, qwen3-8b-solo)\n",
      stderr: "",
    });
  });

  it("exits 1 with every cross-check error of a broken stack", () => {
    const project = projectCopy("broken", join(FIXTURES, "sites", "broken.yaml"));
    const known =
      "glm53-full-tp4-gr8, qwen3-30b-sglang-tmux, qwen3-32b-vllm-tp2, qwen3-8b-solo, qwen38-27b-nvfp4-dgpp, " +
      "qwen38-flash";
    expect(sm121(["validate", "--stack", "broken"], project)).toEqual({
      code: 1,
      stdout: "",
      stderr: [
        "recipes/qwen3-32b-vllm-tp2.toml:12:1: tp: tp = 2 starts 2 ranks, one per GPU, " +
          "but deployment qwen3-32b-vllm-tp2 (Pulumi.broken.yaml:9) has 3 GPUs (3 nodes x 1 GPU; " +
          "a DGX Spark has one GB10 unless the node sets gpus); " +
          "set tp = 3 in recipes/qwen3-32b-vllm-tp2.toml, or list 2 nodes in the deployment",
        'Pulumi.broken.yaml:12:15: sm121:deployments[1].nodes[0]: node "n3" also serves deployment ' +
          "qwen3-32b-vllm-tp2, and qwen3-32b-vllm-tp2 runs on 3 nodes; a node shared by deployments serves " +
          "one-node deployments only (the ranks of a group meet on fixed ports); " +
          "give qwen3-32b-vllm-tp2 nodes of its own, or remove n3 from one of them",
        "recipes/glm53-full-tp4-gr8.toml:7:1: tp: gr8 runs one rank per peer: " +
          "tp = 4 in recipes/glm53-full-tp4-gr8.toml but 2 nodes are listed; list 4 nodes or set tp = 2",
        'Pulumi.broken.yaml:13:7: sm121:deployments[2].recipe: recipe "qwen3-8b" is not in recipes/; ' +
          `use one of ${known} or add recipes/qwen3-8b.toml`,
        "4 errors",
        "",
      ].join("\n"),
    });
  });

  it("exits 1 with every error of every broken recipe", () => {
    const project = projectCopy("spark-site", join(ROOT, "Pulumi.spark-site.yaml"), [
      "gr8-with-port.toml",
      "vllm-owned-flags.toml",
    ]);
    const r = sm121(["validate", "--stack", "spark-site"], project);
    expect(r).toEqual({
      code: 1,
      stdout: "",
      stderr: [
        "recipes/gr8-with-port.toml:6:1: port: gr8 serves its API on a fixed port (8100 on the first peer), " +
          "so port is not used; remove port",
        "recipes/vllm-owned-flags.toml:6:9: args[0]: --host is set by sm121; " +
          "remove it (sm121 sets it from the node's BIND/ip)",
        "recipes/vllm-owned-flags.toml:6:30: args[2]: --api-key is set by sm121; " +
          "remove it (put API_KEY in the node .env or a Pulumi secret; a flag would show it in argv)",
        "recipes/vllm-owned-flags.toml:9:1: env.HF_TOKEN: HF_TOKEN is a secret and a recipe is plain text; " +
          "set it with `pulumi config set --secret sm121:hfToken` or keep it in the node .env",
        "4 errors",
        "",
      ].join("\n"),
    });
    expect(r.stderr).not.toContain("sk-test");
    expect(r.stderr).not.toContain("hf_not_a_real_token");
  });

  it("reports the site's and the recipes' errors in one run", () => {
    const project = projectCopy("mixed", join(FIXTURES, "sites", "broken-schema.yaml"), ["gr8-with-port.toml"]);
    const r = sm121(["validate", "--stack", "mixed"], project);
    expect(r.code).toBe(1);
    expect(r.stderr.split("\n").sort()).toEqual(
      [
        "",
        "2 errors",
        "Pulumi.mixed.yaml:4:24: sm121:nodes.n1.ip: is not an IPv4 address; " +
          "write the node's address on the cluster network, e.g. 203.0.113.12",
        "recipes/gr8-with-port.toml:6:1: port: gr8 serves its API on a fixed port (8100 on the first peer), " +
          "so port is not used; remove port",
      ].sort(),
    );
  });

  it("exits 1 naming a missing stack file", () => {
    const project = projectCopy("other", join(FIXTURES, "sites", "examples.yaml"));
    writeFileSync(join(project, "README"), "");
    const r = sm121(["validate", "--stack", "absent"], project);
    expect([r.code, r.stdout]).toEqual([1, ""]);
    expect(r.stderr).toBe(
      `sm121 validate: no stack config ${join(project, "Pulumi.absent.yaml")}: ` +
        "create it (see Pulumi.spark-site.yaml) or pick a stack with --stack\n",
    );
  });
});
