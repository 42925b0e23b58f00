/**
 * The simulated site the CLI suites work on, served with the real Pulumi CLI, and the compiled
 * `sm121` run as an operator runs it (SM121_PROJECT, SM121_STACK, the site's client key).
 *
 * Three nodes, three deployments, three deploy targets:
 * - spark1 (protected, with a gpuProbe): `solo`, a docker vLLM container;
 * - spark2: `flash`, the seed-001 script recipe (profile datagen), with API_KEY in its .env;
 * - spark3: `small`, a vLLM in a tmux session.
 */
import { spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { cells } from "../src/cli/table";
import { e2eProject, REPO, type E2E } from "./helpers/project";
import { testDir } from "./helpers/tmp";
import type { SiteAt } from "./site/alloc";
import { makeScriptRecipe } from "./site/recipe";
import type { SimNode, SimSite } from "./site/site";

export const API_KEY = "sk-sim-cli-0123456789";

export const SOLO = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "16384"]
[readiness]
timeout_s = 60
max_model_len = 16384
`;

export const SMALL = `engine = "vllm"
deploy = "tmux"
model = "Qwen/Qwen3-0.6B"
served_model_name = "qwen3-small"
port = 8000
args = ["--max-model-len", "4096"]
[readiness]
timeout_s = 60
`;

export interface StackOptions {
  knownHosts?: string;
  /** Replaces the deployment of spark3 (a YAML list item). */
  spark3Deployment?: string;
}

/** The files a gpuProbe leaves behind, so a test can tell whether it ran. */
export const probeMark = (n: SimNode) => join(n.home, "gpu-probe-ran");

export function stackYaml(site: SimSite, o: StackOptions = {}): string {
  const [n1, n2, n3] = site.nodes as [SimNode, SimNode, SimNode];
  const ssh = (n: SimNode) =>
    `      ssh: { host: ${n.ip}, port: ${n.sshPort}, user: ${site.user} }\n      ip: ${n.ip}\n      stateDir: ~/.sm121`;
  return [
    "config:",
    `  sm121:knownHosts: ${o.knownHosts ?? site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:memTimeoutS: 30",
    "  sm121:readyGraceS: 0",
    "  sm121:nodes:",
    `    ${n1.name}:`,
    ssh(n1),
    "      protected: true",
    `      env: { HF_HOME: ${n1.home}/.cache/huggingface }`,
    `      gpuProbe: nvidia-smi -L && echo probed >> ${probeMark(n1)}`,
    `    ${n2.name}:`,
    ssh(n2),
    `      env: { HF_HOME: ${n2.home}/.cache/huggingface, BIND: ${n2.ip}, PORT: 8000, REQUIRE_IDLE_GPU: 1 }`,
    `      vars: { tritonCache: ${n2.home}/.cache/triton-qwen38 }`,
    `      gpuProbe: nvidia-smi -L && echo probed >> ${probeMark(n2)}`,
    "      recipes:",
    "        qwen38-flash: { dir: ~/spark-recipes/qwen38-flash, container: qwen38-flash }",
    `    ${n3.name}:`,
    ssh(n3),
    `      env: { HF_HOME: ${n3.home}/.cache/huggingface }`,
    "  sm121:deployments:",
    `    - { name: solo, recipe: qwen3-8b-solo, nodes: [${n1.name}] }`,
    `    - { name: flash, recipe: qwen38-flash, profile: datagen, nodes: [${n2.name}] }`,
    `    - ${o.spark3Deployment ?? `{ name: small, recipe: qwen3-small-tmux, nodes: [${n3.name}] }`}`,
    "",
  ].join("\n");
}

export interface CliSite {
  e: E2E;
  nodes: [SimNode, SimNode, SimNode];
}

/** Starts the site, writes the stack and serves every deployment with `pulumi up`. */
export async function servedSite(name: string, at: SiteAt): Promise<CliSite> {
  const e = await e2eProject({
    name,
    nodes: ["spark1", "spark2", "spark3"],
    ...at,
    config: () => "",
    recipes: { "qwen3-8b-solo.toml": SOLO, "qwen3-small-tmux.toml": SMALL },
  });
  const nodes = e.site.nodes as [SimNode, SimNode, SimNode];
  const dir = makeScriptRecipe(nodes[1], "spark-recipes/qwen38-flash");
  // The operator's key, kept in the node's .env: up carries it over, start.sh gives it to vLLM.
  writeFileSync(join(dir, ".env"), `API_KEY="${API_KEY}"\n`, { mode: 0o600 });
  e.writeStack(stackYaml(e.site));
  const up = await e.up({ SM121_ALLOW_PROTECTED: nodes[0].name });
  if (up.code !== 0) throw new Error(`pulumi up failed:\n${up.all}`);
  return { e, nodes };
}

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export interface CliOptions {
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Called with the child as soon as it runs (to signal it). */
  onSpawn?: (child: import("node:child_process").ChildProcess) => void;
  onStdout?: (text: string) => void;
}

/**
 * Is a tsc writing this checkout's dist/: one started in it, or naming it, without --noEmit? Another
 * checkout's tsc, or a type check, writes nothing here.
 */
function tscRunning(): boolean {
  const repo = realpathSync(REPO);
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
      if (!argv.some((a) => /bin\/tsc$/.test(a)) || argv.includes("--noEmit")) continue;
      if (readlinkSync(`/proc/${pid}/cwd`) === repo || argv.some((a) => a.startsWith(`${repo}/`))) return true;
    } catch {
      // It ended while it was read.
    }
  }
  return false;
}

let snapshot: { dir: string; bin: Promise<string> } | undefined;

/**
 * A private copy of the compiled CLI, taken once per suite while no tsc runs: a build during the
 * suite (another suite's beforeAll, a developer's tsc) rewrites dist/ in place and could hand a
 * run a half-written file. It goes with the file's other directories (test/setup.ts); a worker
 * that runs the next file with the same modules (the unit lane) takes a new one.
 */
function compiledCli(): Promise<string> {
  if (snapshot !== undefined && existsSync(snapshot.dir)) return snapshot.bin;
  const dir = testDir("sm121-cli-dist-");
  const bin = (async () => {
    if (!existsSync(join(REPO, "dist", "src", "cli", "status.js")))
      throw new Error("dist/ is not built: run npx tsc -p . first");
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
    for (let attempt = 0; ; attempt++) {
      for (let i = 0; i < 240 && tscRunning(); i++) await new Promise((r) => setTimeout(r, 250));
      rmSync(join(dir, "dist"), { recursive: true, force: true });
      cpSync(join(REPO, "dist", "src"), join(dir, "dist", "src"), { recursive: true });
      if (!tscRunning() || attempt >= 3) break;
    }
    cpSync(join(REPO, "bin"), join(dir, "bin"), { recursive: true });
    return join(dir, "bin", "sm121");
  })();
  snapshot = { dir, bin };
  return bin;
}

/** What the CLI runs against: a project directory, its stack and the ssh key. */
export interface CliTarget {
  dir: string;
  stack: string;
  site: { clientKey: string };
}

/** The compiled CLI as an operator runs it; the suites need `npx tsc -p .` first (npm test does it). */
export async function sm121(e: CliTarget, args: string[], o: CliOptions = {}): Promise<CliRun> {
  const bin = await compiledCli();
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      SM121_PROJECT: e.dir,
      SM121_STACK: e.stack,
      SM121_SSH_KEY: e.site.clientKey,
      SM121_LANG: "en",
      ...o.env,
    };
    delete env["SSH_AUTH_SOCK"];
    const started = Date.now();
    const child = spawn(process.execPath, [bin, ...args], { cwd: e.dir, env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), o.timeoutMs ?? 120_000);
    child.stdout.on("data", (d: Buffer) => {
      stdout += d.toString();
      o.onStdout?.(stdout);
    });
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - started });
    });
    o.onSpawn?.(child);
  });
}

/** Parses stdout as JSON, with the whole run in the error when it is not. */
export function json(r: CliRun): unknown {
  try {
    return JSON.parse(r.stdout) as unknown;
  } catch {
    throw new Error(`not JSON (exit ${String(r.code)}):\n${r.stdout}\n--- stderr ---\n${r.stderr}`);
  }
}

/**
 * The rows of a text table as sm121 prints it, cell texts joined again where a cell wrapped onto
 * the row's next lines: tests read what a table says, not where its lines break. The table is the
 * one whose header starts with `firstHeader`; columns start where the header's names start (names
 * are two or more cells apart, a name may hold single spaces); a line whose first column is empty
 * continues the row above.
 */
export function tableRows(text: string, firstHeader: string): Array<Record<string, string>> {
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.trimStart().startsWith(`${firstHeader} `));
  const header = lines[at];
  if (header === undefined) throw new Error(`no table with the header ${firstHeader} in:\n${text}`);
  const columns = [...header.matchAll(/\S+(?: \S+)*/g)].map((m) => ({
    name: m[0],
    start: cells(header.slice(0, m.index)),
  }));
  const split = (line: string): string[] => {
    const out = columns.map(() => "");
    let col = 0;
    for (const { segment } of new Intl.Segmenter().segment(line)) {
      const i = columns.findLastIndex((c) => c.start <= col);
      if (i >= 0) out[i] += segment;
      col += cells(segment);
    }
    return out.map((x) => x.trim());
  };
  const rows: Array<Record<string, string>> = [];
  for (const line of lines.slice(at + 1)) {
    if (line.trim() === "" || !line.startsWith(" ".repeat(columns[0]?.start ?? 0))) break;
    const parts = split(line);
    const last = rows[rows.length - 1];
    if (parts[0] === "" && last !== undefined) {
      columns.forEach((c, i) => {
        if (parts[i] !== "")
          last[c.name] = last[c.name] === "" ? (parts[i] ?? "") : `${last[c.name] ?? ""} ${parts[i] ?? ""}`;
      });
    } else rows.push(Object.fromEntries(columns.map((c, i) => [c.name, parts[i] ?? ""])));
  }
  return rows;
}
