/**
 * The program's fabric step: the look at the nodes of the deployments with a fabric (./resolve.serve),
 * the refusals thrown before any node is touched, and the bundles rendered again where the look
 * resolved an `auto` fabric (the plan then shows what it found).
 */
import type { Dialer } from "../remote";
import type { NodeFabric } from "./site.recipe";
import type { Recipe, Site } from "../recipe/types";
import { renderSite } from "../render/deployment";
import type { DeploymentBundle } from "../render/types";
import { t } from "../text/messages";
import { lookFabric, type FabricDeployment } from "./resolve.serve";

export interface FabricStepInput {
  site: Site;
  recipes: ReadonlyMap<string, Recipe>;
  root: string;
  bundles: DeploymentBundle[];
  /** The operation's connections, shared with the look that follows. */
  dial: Dialer;
  /** The error the program throws (Pulumi's RunError prints without a stack). */
  refuse: (message: string) => Error;
  /**
   * false: the image IDs are the node look's (the program's look asks them in each node's one
   * docker call, and refuses by imageRefusals); by default this look asks them itself.
   */
  images?: boolean;
}

/** The deployments as the fabric's look reads them. */
export function fabricDeploymentsOf(bundles: readonly DeploymentBundle[]): FabricDeployment[] {
  return bundles.map((b) => ({
    name: b.deployment,
    deploy: b.deploy,
    nodes: b.nodes.map((n) => n.node),
    ...(b.nodes[0]?.image !== undefined && { image: b.nodes[0].image }),
  }));
}

export async function fabricStep(i: FabricStepInput): Promise<DeploymentBundle[]> {
  const ds = fabricDeploymentsOf(i.bundles);
  const look = await lookFabric(i.site, ds, i.dial, { images: i.images !== false });
  if (look.refusals.length > 0) {
    throw i.refuse([t("fabric.refuses"), ...look.refusals.map((r) => `  ${r}`)].join("\n"));
  }
  return withResolved(i, look.resolved);
}

/**
 * The bundles rendered again where the look resolved an `auto` fabric (pure): the plan then shows
 * what it found. Nothing resolved: the bundles as they were.
 */
export function withResolved(
  i: Pick<FabricStepInput, "site" | "recipes" | "root" | "bundles">,
  resolved: Readonly<Record<string, NodeFabric>>,
): DeploymentBundle[] {
  if (Object.keys(resolved).length === 0) return i.bundles;
  const nodes = { ...i.site.nodes };
  for (const [n, f] of Object.entries(resolved)) if (nodes[n] !== undefined) nodes[n] = { ...nodes[n], fabric: f };
  const keep = new Set(i.bundles.map((b) => b.deployment));
  return renderSite({ ...i.site, nodes }, i.recipes, { root: i.root }).filter((b) => keep.has(b.deployment));
}
