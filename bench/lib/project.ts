/**
 * A benchmark project on the simulated site: test/helpers/project.ts's e2eProject with the bench
 * recipes, the session counter on every node, and a way to rewrite the deployments between runs.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eProject, nodesYaml, type E2E } from "../../test/helpers/project";
import type { PulumiRun } from "../../test/helpers/pulumi";
import { engineTree } from "../../test/site/dockerd";
import type { SiteImageName } from "../../test/site/images";
import { sshdListeners } from "../../test/site/sshd";
import { nodeCpu, type NodeCpu } from "./nodecpu";
import { BENCH_RECIPES } from "./recipes";
import { installSessionCounter } from "../../test/site/sessions";

export interface BenchProject {
  e: E2E;
  /**
   * The nodes' CPU group (./nodecpu): every node's sshd and Docker Engine (dockerd, containerd)
   * are in it from the start, and the engines' containers always; `place(false)` takes the sshds
   * and engines out, and the sessions, shims and runc they start from then on with them. `usedMs`
   * is the CPU time they have used.
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
  /** The site images every node has (default: all of them). */
  images?: SiteImageName[];
  /** Directories to create under every node's home (caches a recipe mounts). */
  homeDirs?: string[];
}

export async function benchProject(o: BenchProjectOptions): Promise<BenchProject> {
  if (!o.name.startsWith("bench")) throw new Error(`bench project names start with "bench": ${o.name}`);
  if (o.firstIp < 100 || o.firstIp + o.nodes.length - 1 > 149)
    throw new Error(`bench addresses are 127.0.0.100-149: ${o.firstIp} + ${o.nodes.length}`);
  if (o.sshPort < 2300 || o.sshPort > 2349) throw new Error(`bench ssh ports are 2300-2349: ${o.sshPort}`);
  // Made first: the nodes' engines put their containers in it from the start.
  const cpu = nodeCpu(o.name);
  const e = await e2eProject({
    ...(cpu.cgroupParent !== undefined && { cgroupParent: cpu.cgroupParent }),
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
  }).catch((err: unknown) => {
    cpu.close();
    throw err;
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
  // The nodes' side: every node's sshd, and its Docker Engine (dockerd and the containerd it started).
  const sshds = e.site.nodes.flatMap((n) => sshdListeners(e.site.dir, n.root).map((r) => r.pid));
  const pids = [...sshds, ...engineTree(e.site.dir)];
  const nodes = {
    how: cpu.how,
    weighted: cpu.weighted,
    usedMs: () => cpu.usedMs(),
    place: (weighted: boolean) => cpu.place(pids, weighted),
  };
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
