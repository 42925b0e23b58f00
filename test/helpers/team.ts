/**
 * A team on one simulated site: the stack's state in a real PostgreSQL (test/site/postgres), and
 * checkouts of the project at different paths, each with its own HOME (its own ~/.ssh/known_hosts)
 * and PULUMI_HOME, as operators' machines and CI runners have. Runs are spawned in process groups
 * of their own, so that a test can find a run's Pulumi CLI and its provider, and kill them as a
 * dying runner dies. Two deployments, `chat` on the first node and `code` on the second, both
 * vLLM in tmux, whose engines append a start record to their log each time they start.
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pulumiRunEnv } from "../../src/cli/pulumi";
import type { SiteAt } from "../site/alloc";
import { startPostgres, stopStalePostgres, type Postgres } from "../site/postgres";
import { procStat } from "../site/procs";
import type { SimNode } from "../site/site";
import { alive, e2eProject, nodesYaml, REPO, type E2E } from "./project";
import type { PulumiRun } from "./pulumi";
import { modelsIn } from "./json";

/**
 * Pulumi's DIY stack lock, as a refused run prints it (pkg/backend/diy/lock.go of v3.274.1): the
 * holder's user, host and pid are groups 1-3.
 */
export const STACK_LOCKED = new RegExp(
  [
    String.raw`error: the stack is currently locked by 1 lock\(s\)\. Either wait for the other process\(es\) `,
    String.raw`to end or delete the lock file with \`pulumi cancel\`\.\n {2}postgres://\*{4}:\*{4}@127\.0\.0\.1:\d+/`,
    String.raw`pulumi_state/\.pulumi/locks/organization/sm121/sim/[0-9a-f-]{36}\.json\?sslmode=disable: `,
    String.raw`created by (\S+)@(\S+) \(pid (\d+)\) at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`,
  ].join(""),
);

/** The deployments: number i on node i. */
export const TEAM = [
  { name: "chat", port: 8000 },
  { name: "code", port: 8001 },
] as const;

/** The file a gated recipe's engines wait for on their node (see gate). */
const GATE = ".team-gate";

/**
 * A recipe of the team's deployments. `gated`: its before_serve hook waits, under the node's
 * lock, until the test opens the node's gate (openGates), so that a run holds its nodes for as
 * long as a test needs, without a timing.
 */
export function teamRecipe(name: string, port: number, maxLen: number, gated = false): string {
  const engine = ['engine = "vllm"', 'deploy = "tmux"', 'model = "Qwen/Qwen3-8B"'];
  const serve = [`served_model_name = "qwen3-8b-${name}"`, `port = ${port}`, `args = ["--max-model-len", "${maxLen}"]`];
  const hook = gated ? ["[hooks]", `before_serve = ["while [ ! -e ~/${GATE} ]; do sleep 0.1; done"]`] : [];
  return [...engine, ...serve, ...hook, "[readiness]", "timeout_s = 120", ""].join("\n");
}

/** Closes (false) or opens (true) every node's gate. */
export function setGates(nodes: readonly SimNode[], open: boolean): void {
  for (const n of nodes) {
    if (open) writeFileSync(join(n.home, GATE), "");
    else rmSync(join(n.home, GATE), { force: true });
  }
}

export interface Run {
  /** The spawned process (the leader of the run's process group). */
  pid: number;
  done: Promise<PulumiRun>;
  /** The `pulumi` CLI processes of this run seen so far (its group is polled while it runs). */
  pulumiPids: Set<number>;
  /** What it printed so far (stdout and stderr). */
  output(): string;
}

export interface Checkout {
  name: string;
  dir: string;
  home: string;
  env: Record<string, string>;
  /** `pulumi <args>` in this checkout, non-interactive. */
  pulumi(args: string[], env?: Record<string, string>): Run;
  /** scripts/ci-deploy.sh in this checkout, as a CI job runs it. */
  ciDeploy(args: string[], env?: Record<string, string>): Run;
  /** The checkout's change: both recipes at this max_model_len (gated: see teamRecipe). */
  setMaxLen(len: number, gated?: boolean): void;
}

const BATCH = ["--non-interactive", "--color", "never"];
const pids = (): number[] =>
  readdirSync("/proc")
    .filter((d) => /^\d+$/.test(d))
    .map(Number);

function comm(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/comm`, "utf8").trim();
  } catch {
    return "";
  }
}

/** A process's command line ("" once it is gone). */
function cmdline(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8");
  } catch {
    return "";
  }
}

/** The dynamic provider plugin a Pulumi CLI started (its child), if it runs. */
export function providerOf(cli: number): number | undefined {
  return pids().find((p) => procStat(p)?.ppid === cli && cmdline(p).includes("pulumi-resource-pulumi-nodejs"));
}

/** Polls `cond` every 50 ms until it holds or `ms` pass; whether it held. */
export async function until(cond: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
  return true;
}

function spawnRun(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv): Run {
  const child = spawn(cmd, args, { cwd, env, stdio: ["ignore", "pipe", "pipe"], detached: true });
  const pid = child.pid ?? 0;
  const pulumiPids = new Set<number>();
  const look = () => {
    for (const p of pids()) if (procStat(p)?.pgid === pid && comm(p) === "pulumi") pulumiPids.add(p);
  };
  let out = "";
  let err = "";
  let all = "";
  child.stdout.on("data", (d: Buffer) => {
    out += d.toString();
    all += d.toString();
  });
  child.stderr.on("data", (d: Buffer) => {
    err += d.toString();
    all += d.toString();
  });
  const started = Date.now();
  const seen = setInterval(look, 50);
  const done = new Promise<PulumiRun>((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code) => {
      clearInterval(seen);
      resolve({ code, stdout: out, stderr: err, all: out + err, ms: Date.now() - started });
    });
  });
  look();
  return { pid, done, pulumiPids, output: () => all };
}

/** A checkout of the project at `dir`: the files a clone has, the build and modules linked in. */
export function checkout(name: string, from: E2E, dir: string, home: string, env: Record<string, string>): Checkout {
  if (dir !== from.dir) {
    mkdirSync(dir, { recursive: true });
    const files = ["Pulumi.yaml", "package.json", `Pulumi.${from.stack}.yaml`];
    for (const f of files) copyFileSync(join(from.dir, f), join(dir, f));
    cpSync(join(from.dir, "recipes"), join(dir, "recipes"), { recursive: true });
    for (const link of ["dist", "node_modules"]) symlinkSync(join(REPO, link), join(dir, link));
  }
  mkdirSync(join(home, ".ssh"), { recursive: true, mode: 0o700 });
  const full = { ...from.pulumi.env, PULUMI_HOME: join(home, ".pulumi"), HOME: home, ...env };
  const runEnv = (more: Record<string, string>) => pulumiRunEnv({ ...process.env, ...full, ...more });
  const ciDeploy = join(REPO, "scripts", "ci-deploy.sh");
  return {
    name,
    dir,
    home,
    env: full,
    pulumi: (args, more = {}) => spawnRun("pulumi", [...args, ...BATCH], dir, runEnv(more)),
    ciDeploy: (args, more = {}) => spawnRun("bash", [ciDeploy, ...args, "--cwd", dir], dir, runEnv(more)),
    setMaxLen: (len, gated = false) => {
      for (const d of TEAM) {
        writeFileSync(join(dir, "recipes", `${d.name}.toml`), teamRecipe(d.name, d.port, len, gated));
      }
    },
  };
}

/** The site's known_hosts: what each checkout's ~/.ssh/known_hosts (sm121:knownHosts' default) holds. */
export function knownHostsOf(e: E2E): string {
  return readFileSync(e.site.knownHosts, "utf8");
}

/** A node's engine start records: the `non-default args` line each start of the fake vLLM logs. */
export function engineStarts(n: SimNode, deployment: string): string[] {
  return engineLog(n, deployment).filter((l) => l.includes("non-default args:"));
}

/** The node's engine log, line by line (every start of the engine appends to it). */
export function engineLog(n: SimNode, deployment: string): string[] {
  const log = join(n.home, ".sm121", "deployments", deployment, "logs", "engine.log");
  return existsSync(log) ? readFileSync(log, "utf8").split("\n") : [];
}

/** How many times the node's engine started at this max_model_len. */
export function startsAt(n: SimNode, deployment: string, len: number): number {
  return engineStarts(n, deployment).filter((l) => l.includes(`'max_model_len': ${len}}`)).length;
}

/** What the node's engine serves: the max_model_len of each model /v1/models lists. */
export async function servedLens(n: SimNode, port: number): Promise<Array<number | undefined>> {
  const r = await fetch(`http://${n.ip}:${port}/v1/models`);
  return modelsIn(await r.text()).map((m) => m.max_model_len);
}

/** The node's tmux sessions (one per engine of the tmux target). */
export function tmuxSessions(n: SimNode): string[] {
  const env = { ...process.env, TMUX_TMPDIR: join(n.root, "tmp") };
  const r = spawnSync("tmux", ["ls", "-F", "#{session_name}"], { env, encoding: "utf8" });
  return r.stdout.split("\n").filter((l) => l !== "");
}

const lockFile = (n: SimNode) => join(n.home, ".sm121", "node.lock");

/** Whether a node's lock is free (flock on its lock file: the site's nodes are this machine's directories). */
export function nodeLockFree(n: SimNode): boolean {
  return spawnSync("flock", ["-n", lockFile(n), "true"]).status === 0;
}

/** Who took the node's lock last (its holder file). */
export function nodeLockHolder(n: SimNode): string {
  return readFileSync(`${lockFile(n)}.holder`, "utf8");
}

export interface Team {
  e: E2E;
  pg: Postgres;
  /** Operator A: the project directory, with its own home; the file backend until moveToPostgres. */
  a: Checkout;
  base: string;
  /** Keeps a run's output under <base>/transcripts/<name>.txt. */
  keep(name: string, text: string): void;
}

/**
 * The site, a PostgreSQL (after stopping one a crashed run of this file left), the stack file
 * every checkout shares (no machine's path in it: sm121:knownHosts keeps its default,
 * ~/.ssh/known_hosts, which each operator and runner has for the nodes), and operator A.
 */
export async function teamProject(name: string, at: SiteAt, pgPort: number): Promise<Team> {
  const base = `/tmp/sm121-e2e-${name}-${process.pid}`;
  const re = new RegExp(`^sm121-e2e-${name}-(\\d+)$`);
  for (const d of readdirSync("/tmp")) {
    const m = re.exec(d);
    if (m !== null && !alive(Number(m[1]))) await stopStalePostgres(join("/tmp", d, "postgres"));
  }
  const pg = await startPostgres({ dir: join(base, "postgres"), port: pgPort });
  const recipes = Object.fromEntries(TEAM.map((d) => [`${d.name}.toml`, teamRecipe(d.name, d.port, 8192)]));
  const e = await e2eProject({ name, nodes: ["spark1", "spark2"], ...at, recipes, config: () => "" });
  const on = (i: number) => e.site.nodes[i]?.name ?? "";
  const deployments = TEAM.map((d, i) => `    - { name: ${d.name}, recipe: ${d.name}, nodes: [${on(i)}] }`);
  const settings = [
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:memFloorGiB: 1",
    "  sm121:memTimeoutS: 30",
    "  sm121:readyGraceS: 0",
  ];
  e.writeStack(["config:", ...settings, nodesYaml(e.site), "  sm121:deployments:", ...deployments, ""].join("\n"));
  const a = checkout("operator A", e, e.dir, join(base, "operator-a"), {});
  writeFileSync(join(a.home, ".ssh", "known_hosts"), knownHostsOf(e));
  const select = await a.pulumi(["stack", "select", e.stack]).done;
  if (select.code !== 0) throw new Error(`pulumi stack select failed:\n${select.all}`);
  mkdirSync(join(base, "transcripts"), { recursive: true });
  return { e, pg, a, base, keep: (n, text) => writeFileSync(join(base, "transcripts", `${n}.txt`), text) };
}

/** CI runner B: another path, its own home, the shared backend from the environment (as CI sets it). */
export function runnerB(t: Team): Checkout {
  const runner = join(t.base, "runner-b");
  const env = { PULUMI_BACKEND_URL: t.pg.url, PGPASSWORD: t.pg.password, SM121_KNOWN_HOSTS: knownHostsOf(t.e) };
  return checkout("CI runner B", t.e, join(runner, "work", "sm121"), join(runner, "home"), env);
}

/**
 * Moves a checkout's stack from its file backend into PostgreSQL as docs/team.md says: export,
 * `pulumi login` (the password from PGPASSWORD), init, import, and the file backend's copy removed
 * (its stack file kept). Each step's run, in order.
 */
export async function moveToPostgres(c: Checkout, stack: string, pg: Postgres, file: string): Promise<PulumiRun[]> {
  const before = c.env["PULUMI_BACKEND_URL"] ?? "";
  const runs = [await c.pulumi(["stack", "export", "--stack", stack, "--file", file]).done];
  Object.assign(c.env, { PULUMI_BACKEND_URL: "", PGPASSWORD: pg.password });
  for (const args of [
    ["login", pg.url],
    ["stack", "init", stack],
    ["stack", "import", "--file", file],
  ]) {
    runs.push(await c.pulumi(args).done);
  }
  const rm = ["stack", "rm", stack, "--force", "--yes", "--preserve-config"];
  runs.push(await c.pulumi(rm, { PULUMI_BACKEND_URL: before }).done);
  return runs;
}

/** The one up that records the move on the nodes (their owner records name the new backend). */
export function recordMove(c: Checkout, nodes: readonly SimNode[]): Run {
  return c.pulumi(["up", "--yes", "--skip-preview"], { SM121_ALLOW_TAKEOVER: nodes.map((n) => n.name).join(",") });
}

/** A deployment's owner record on a node (serve/owner). */
export function ownerRecord(n: SimNode, deployment: string): { project: string; stack: string; backend: string } {
  return JSON.parse(readFileSync(join(n.home, ".sm121", "deployments", deployment, "owner.json"), "utf8")) as {
    project: string;
    stack: string;
    backend: string;
  };
}
