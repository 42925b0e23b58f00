/**
 * The two-Spark pair the fabric end-to-end tests serve: two nodes with a ConnectX-7 fabric
 * (their tools and device directory set up by the site) and the tp 2 vLLM recipe on them.
 */
import { devicesDir, PAIR_RECIPE, setFabric, sparkFabric } from "../site/fabric";
import type { SiteAt } from "../site/alloc";
import type { SimNode } from "../site/site";
import { e2eProject, type E2E } from "./project";

export interface PairOptions {
  name: string;
  nodes: [string, string];
  /** Where the nodes are (test/site/alloc.ts). */
  at: SiteAt;
  /** The nodes' RDMA ports, as the stack file writes them. */
  rdma: string;
  /** More sm121: config lines before the deployment. */
  config?: string;
}

/** The stack file's deployment of the pair on `nodes`. */
export function pairDeployment(nodes: readonly string[]): string {
  return `  sm121:deployments:\n    - { name: pair, recipe: pair, nodes: [${nodes.join(", ")}] }`;
}

export function pairProject(o: PairOptions): Promise<E2E> {
  const fabric = (n: SimNode) => `      fabric: { interface: enp1s0f1np1, rdma: ${o.rdma}, devices: ${devicesDir(n)} }`;
  const deployment = pairDeployment(o.nodes);
  return e2eProject({
    name: o.name,
    nodes: o.nodes,
    ...o.at,
    nodeExtra: fabric,
    prepare: (site) => {
      for (const n of site.nodes) setFabric(n, sparkFabric(n.ip));
    },
    config: () => (o.config === undefined ? deployment : `${o.config}\n${deployment}`),
    recipes: { "pair.toml": PAIR_RECIPE },
  });
}
