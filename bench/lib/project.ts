/**
 * A benchmark project on the simulated site: test/helpers/project.ts's e2eProject with the bench
 * recipes, the session counter on every node, and a way to rewrite the deployments between runs.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eProject, nodesYaml, type E2E } from "../../test/helpers/project";
import type { PulumiRun } from "../../test/helpers/pulumi";
import type { ImageSpec } from "../../test/site/site";
import { dockerdProcesses } from "../../test/site/dockerd";
import { sshdListeners } from "../../test/site/sshd";
import { nodeCpu, type NodeCpu } from "./nodecpu";
import { BENCH_RECIPES } from "./recipes";
import { installSessionCounter } from "./sessions";

export interface BenchProject {
  e: E2E;
  /**
   * The nodes' CPU group (./nodecpu): every node's sshd and the site's docker daemon are in it
   * from the start; `place(false)` takes them out, and the sessions they start from then on with
   * them. `usedMs` is the CPU time they have used.
   */
  nodes: Pick<NodeCpu, "how" | "weighted" | "usedMs"> & { place(weighted: boolean): void };
  /** Stops the site and removes the nodes' CPU group. */
  stop(): Promise<void>;
  /** Rewrites the stack: the site as e2eProject writes it, with these deployment lines. */
  setDeployments(yaml: string): void;
  /** Rewrites the bench recipes with another BENCH_REV (a changed bundle identity). */
  setRecipeRev(rev: number): void;
  up(extra?: string[], env?: Record<string, string>): Promise<PulumiRun>;
  preview(extra?: string[]): Promise<PulumiRun>;
  destroy(extra?: string[]): Promise<PulumiRun>;
  refresh(): Promise<PulumiRun>;
}

export interface BenchProjectOptions {
  name: string;
  nodes: string[];
  firstIp: number;
  sshPort: number;
  deployments: string;
  /** The images every node has (default: the site's DEFAULT_IMAGES). */
  images?: Record<string, ImageSpec>;
  /** Directories to create under every node's home (caches a recipe mounts). */
  homeDirs?: string[];
}

export async function benchProject(o: BenchProjectOptions): Promise<BenchProject> {
  if (!o.name.startsWith("bench")) throw new Error(`bench project names start with "bench": ${o.name}`);
  if (o.firstIp < 100 || o.firstIp + o.nodes.length - 1 > 149) throw new Error(`bench addresses are 127.0.0.100-149: ${o.firstIp} + ${o.nodes.length}`);
  if (o.sshPort < 2300 || o.sshPort > 2349) throw new Error(`bench ssh ports are 2300-2349: ${o.sshPort}`);
  const e = await e2eProject({
    name: o.name,
    nodes: o.nodes,
    firstIp: o.firstIp,
    sshPort: o.sshPort,
    recipes: BENCH_RECIPES(),
    ...(o.images !== undefined && { images: o.images }),
    prepare: (site) => {
      installSessionCounter(site);
      for (const n of site.nodes) for (const d of o.homeDirs ?? []) mkdirSync(join(n.home, d), { recursive: true });
    },
    config: () => o.deployments,
  });
  const base = () => [
    "config:",
    `  sm121:knownHosts: ${e.site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:memTimeoutS: 30",
    "  sm121:readyGraceS: 0",
    "  sm121:dgppPollS: 0.5",
    nodesYaml(e.site),
  ];
  const cpu = nodeCpu(o.name);
  // The nodes' side: every node's sshd, and the docker daemon that answers their docker CLIs.
  const sshds = e.site.nodes.flatMap((n) => sshdListeners(e.site.dir, n.root).map((r) => r.pid));
  const dockerd = dockerdProcesses(e.site.dir).map((r) => r.pid);
  const pids = [...sshds, ...dockerd];
  const nodes = { how: cpu.how, weighted: cpu.weighted, usedMs: () => cpu.usedMs(), place: (weighted: boolean) => cpu.place(pids, weighted) };
  nodes.place(true);
  const run = (args: string[], env: Record<string, string> = {}) => e.pulumi.run(args, { env });
  return {
    e,
    nodes,
    stop: async () => {
      await e.stop();
      cpu.close();
    },
    setDeployments: (yaml) => e.writeStack([...base(), yaml, ""].join("\n")),
    setRecipeRev: (rev) => {
      for (const [f, text] of Object.entries(BENCH_RECIPES(rev))) writeFileSync(join(e.dir, "recipes", f), text);
    },
    up: (extra = [], env = {}) => run(["up", "--yes", "--skip-preview", ...extra], env),
    preview: (extra = []) => run(["preview", "--diff", ...extra]),
    destroy: (extra = []) => run(["destroy", "--yes", "--skip-preview", ...extra]),
    refresh: () => run(["refresh", "--yes", "--skip-preview"]),
  };
}
