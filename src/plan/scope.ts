/**
 * What a run serves and looks at: the site's deployments but those SM121_DOWN leaves out, and what
 * a surge would serve on each spare group, rendered with the fabric the look resolved (pure: the
 * look and the plan both read it, the look before it has seen anything).
 */
import type { Project } from "../project";
import type { NodeFabric } from "../fabric/site.recipe";
import type { Site } from "../recipe/types";
import { renderSite } from "../render/deployment";
import type { DeploymentBundle } from "../render/types";
import { withResolved } from "../fabric/step.serve";

export interface Scope {
  /** The deployments this run serves, in the site's order. */
  bundles: DeploymentBundle[];
  /** What a surge serves on each spare group (recipe/spare): looked at with the deployments, never registered. */
  spares: DeploymentBundle[];
  /** The site with the spares' deployments too: a surge on several nodes needs their fabric as much as a replica. */
  withSpares: Site;
}

export function scopeOf(
  project: Project,
  down: readonly string[],
  fabric: Readonly<Record<string, NodeFabric>> = {},
): Scope {
  const { site, recipes, root } = project;
  const spareDeployments = site.spares.map((s) => s.deployment);
  const declared = project.bundles.filter((b) => !down.includes(b.deployment));
  const rendered = renderSite({ ...site, deployments: spareDeployments }, recipes, { root });
  const withSpares = { ...site, deployments: [...site.deployments, ...spareDeployments] };
  const names = new Set(rendered.map((b) => b.deployment));
  // Only an `auto` fabric the look resolved renders them again.
  const looked = withResolved({ site: withSpares, recipes, root, bundles: [...declared, ...rendered] }, fabric);
  return {
    bundles: looked.filter((b) => !names.has(b.deployment)),
    spares: looked.filter((b) => names.has(b.deployment)),
    withSpares,
  };
}
