/**
 * An sm121 project on the simulated site for end-to-end tests: a temporary project directory
 * (the repo's compiled program and node_modules linked in, the recipes copied), a stack whose
 * Pulumi.<stack>.yaml describes the simulated nodes, and the real Pulumi CLI.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { startSite, stopStaleSite, type SimNode, type SimSite, type StartSiteOptions } from "../site/site";
import { pulumiEnv, type PulumiEnv, type PulumiRun } from "./pulumi";
import { keptForLooking } from "./tmp";

/** The repository root, from the TypeScript sources (vitest) or the compiled dist/ (demo). */
export const REPO = ((): string => {
  let dir = __dirname;
  while (!existsSync(join(dir, "Pulumi.yaml")) && dirname(dir) !== dir) dir = dirname(dir);
  return dir;
})();

export interface E2E {
  site: SimSite;
  dir: string;
  stack: string;
  pulumi: PulumiEnv;
  up(env?: Record<string, string>): Promise<PulumiRun>;
  preview(env?: Record<string, string>): Promise<PulumiRun>;
  refresh(): Promise<PulumiRun>;
  destroy(env?: Record<string, string>): Promise<PulumiRun>;
  writeStack(yaml: string): void;
  /** Rewrites the stack with another sm121: config besides the nodes (the `config` option's part). */
  reconfigure(config: string): void;
  stop(): Promise<void>;
}

export interface E2EOptions extends Omit<StartSiteOptions, "dir"> {
  /** A short name: the site lives in /tmp/sm121-e2e-<name>-<pid> (tmux socket paths are short). */
  name: string;
  /** The sm121: config besides the nodes (deployments, gates, ...), as YAML lines under `config:`. */
  config: (site: SimSite) => string;
  /** Extra recipe files, relative to recipes/. */
  recipes?: Record<string, string>;
  /** More YAML lines under each node (vars, recipes, protected, ...). */
  nodeExtra?: (n: SimNode) => string;
  /** More node env keys (BIND, PORT, ...). */
  nodeEnv?: (n: SimNode) => Record<string, string>;
  /** Called once the site runs, before the stack is written (node-side recipe dirs, models). */
  prepare?: (site: SimSite) => void;
  /**
   * A fixed directory instead of /tmp/sm121-e2e-<name>-<pid>: for a stack recorded as a fixture,
   * whose node paths (and so its bundles' sha256) must be the same at every run. A site left
   * there by an earlier run is stopped and removed first.
   */
  base?: string;
  /**
   * sm121:memFloorGiB, the tripwire's floor on every node: 1 GiB unless said (the nodes share this
   * machine's memory); null writes none, for a release older than the tripwire (it refuses the key).
   */
  memFloorGiB?: number | null;
  /** sm121:dgppPollS, seconds between two polls of a DGPP build: 0.5 unless said. */
  dgppPollS?: number;
}

/** The sm121:nodes block for the simulated nodes. */
export function nodesYaml(
  site: SimSite,
  extra: (n: SimNode) => string = () => "",
  env: (n: SimNode) => Record<string, string> = () => ({}),
): string {
  const lines = ["  sm121:nodes:"];
  for (const n of site.nodes) {
    lines.push(
      `    ${n.name}:`,
      `      ssh: { host: ${n.ip}, port: ${n.sshPort}, user: ${site.user} }`,
      `      ip: ${n.ip}`,
      `      env: { ${Object.entries({ HF_HOME: `${n.home}/.cache/huggingface`, ...env(n) })
        .map(([k, v]) => `${k}: ${v}`)
        .join(", ")} }`,
      `      stateDir: ~/.sm121`,
    );
    const more = extra(n);
    if (more !== "") lines.push(more);
  }
  return lines.join("\n");
}

/** Whether a process with this pid exists. */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A zombie (killed, not yet reaped by whoever inherited it) runs nothing.
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

/**
 * Stops a suite's site and removes `dir` (the site's own, or one that holds it): a site's
 * docker data is hundreds of MB. SM121_KEEP_SITES=1 keeps it to look at after a failure; a
 * directory still busy is left for the next run of the suite to reap.
 */
export async function endSite(site: SimSite | undefined, dir = site?.dir): Promise<void> {
  await site?.stop();
  if (keptForLooking() || dir === undefined) return;
  try {
    rmSync(dir, { recursive: true, force: true });
  } catch {
    return;
  }
}

/** Sites of earlier runs of this suite whose test process is gone (a crash): stop and remove them. */
async function reapStale(name: string): Promise<void> {
  const re = new RegExp(`^sm121-e2e-${name}-(\\d+)$`);
  for (const d of readdirSync("/tmp")) {
    const m = re.exec(d);
    if (m === null || alive(Number(m[1]))) continue;
    await stopStaleSite(join("/tmp", d, "site"));
    rmSync(join("/tmp", d), { recursive: true, force: true });
  }
}

export async function e2eProject(o: E2EOptions): Promise<E2E> {
  await reapStale(o.name);
  const base = o.base ?? `/tmp/sm121-e2e-${o.name}-${process.pid}`;
  if (o.base !== undefined && existsSync(base)) {
    await stopStaleSite(join(base, "site"));
    rmSync(base, { recursive: true, force: true });
  }
  const { name: _n, config, recipes, nodeExtra, nodeEnv, prepare, base: _b, ...siteOpts } = o;
  const site = await startSite({ ...siteOpts, dir: join(base, "site") });
  // Every real Spark has its HF cache; the docker target mounts it.
  for (const n of site.nodes) mkdirSync(join(n.home, ".cache", "huggingface"), { recursive: true });
  prepare?.(site);
  const dir = join(base, "project");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "Pulumi.yaml"), readFileSync(join(REPO, "Pulumi.yaml")));
  writeFileSync(join(dir, "package.json"), '{"name":"sm121-e2e","private":true,"main":"dist/src/index.js"}\n');
  for (const link of ["dist", "node_modules"]) symlinkSync(join(REPO, link), join(dir, link));
  cpSync(join(REPO, "recipes"), join(dir, "recipes"), { recursive: true });
  for (const [f, text] of Object.entries(recipes ?? {})) {
    mkdirSync(join(dir, "recipes", f, ".."), { recursive: true });
    writeFileSync(join(dir, "recipes", f), text);
  }
  const stack = "sim";
  const pulumi = pulumiEnv(dir, join(base, "pulumi"));
  const stackFile = join(dir, `Pulumi.${stack}.yaml`);
  // The encrypted key that `pulumi config set --secret` wrote; kept when a test rewrites the stack.
  let secretBlock = "";
  let salt = "";
  const writeStack = (yaml: string) => writeFileSync(stackFile, salt + yaml + secretBlock);
  const floor = o.memFloorGiB === undefined ? 1 : o.memFloorGiB;
  const stackYaml = (part: string) =>
    [
      "config:",
      `  sm121:knownHosts: ${site.knownHosts}`,
      // Every node of every site shares this machine's memory: the gate and the tripwire's floor
      // are 1 GiB, not a Spark's (a suite that tests them sets its own).
      "  sm121:minMemAvailableGiB: 1",
      ...(floor === null ? [] : [`  sm121:memFloorGiB: ${floor}`]),
      "  sm121:memTimeoutS: 30",
      "  sm121:readyGraceS: 0",
      `  sm121:dgppPollS: ${o.dgppPollS ?? 0.5}`,
      nodesYaml(site, nodeExtra, nodeEnv),
      part,
      "",
    ].join("\n");
  writeStack(stackYaml(config(site)));
  const init = await pulumi.run(["stack", "init", stack]);
  if (init.code !== 0) throw new Error(`pulumi stack init failed:\n${init.all}`);
  const key = await pulumi.run(["config", "set", "--secret", "sm121:sshPrivateKey"], {
    input: readFileSync(site.clientKey, "utf8"),
  });
  if (key.code !== 0) throw new Error(`pulumi config set failed:\n${key.all}`);
  const m = /\n( {2}sm121:sshPrivateKey:\n(?: {4}.*\n)+)/.exec(readFileSync(stackFile, "utf8"));
  if (m === null) throw new Error("the encrypted sm121:sshPrivateKey was not found in the stack file");
  secretBlock = m[1] ?? "";
  // The passphrase provider's salt: without it the secret cannot be decrypted.
  salt = /^encryptionsalt: .*\n/m.exec(readFileSync(stackFile, "utf8"))?.[0] ?? "";
  const run = (args: string[], env?: Record<string, string>) => pulumi.run(args, env === undefined ? {} : { env });
  return {
    site,
    dir,
    stack,
    pulumi,
    up: (env) => run(["up", "--yes", "--skip-preview"], env),
    preview: (env) => run(["preview", "--diff"], env),
    refresh: () => run(["refresh", "--yes", "--skip-preview"]),
    destroy: (env) => run(["destroy", "--yes", "--skip-preview"], env),
    writeStack,
    reconfigure: (part) => writeStack(stackYaml(part)),
    stop: () => endSite(site, base),
  };
}
