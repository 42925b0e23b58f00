/**
 * The program's part of the scrape targets: where the site puts the file, the plan-time look at
 * it, and the ScrapeTargets resource of the deployments this run serves.
 */
import type { Input, Output } from "@pulumi/pulumi/output";
import type { CustomResourceOptions } from "@pulumi/pulumi/resource";
import type { Dialer } from "../remote";
import type { Site } from "../recipe/types";
import { nodeConn } from "../render/node";
import { scrapeFile } from "../render/scrapeTargets";
import type { DeploymentBundle } from "../render/types";
import { lookPlaced, type FileLook, type Placed } from "../serve/sitefile";
import type { ConnectionSettings } from "../providers/settings";
import { ScrapeTargets } from "../providers/scrapeTargets";

function placeOf(site: Site): Placed | undefined {
  const s = site.scrapeTargets;
  if (s === undefined) return undefined;
  const node = s.node === undefined ? undefined : site.nodes[s.node];
  return {
    path: s.path,
    ...(s.node !== undefined && node !== undefined && { node: { name: s.node, conn: nodeConn(node) } }),
  };
}

/** The plan-time look at the file (read-only), when the site asks for one. */
export async function lookScrapeTargets(site: Site, dial: Dialer): Promise<FileLook | undefined> {
  const place = placeOf(site);
  return place === undefined ? undefined : lookPlaced(place, dial);
}

export function scrapeTargetsOf(
  site: Site,
  bundles: readonly DeploymentBundle[],
  found: FileLook | undefined,
  connection: Input<ConnectionSettings> | Output<ConnectionSettings>,
  opts: CustomResourceOptions,
): ScrapeTargets | undefined {
  const place = placeOf(site);
  if (place === undefined) return undefined;
  const file = scrapeFile(bundles, place.node?.name);
  return new ScrapeTargets(
    "scrape-targets",
    {
      path: place.path,
      content: file.text,
      plan: file.plan,
      warnings: file.warnings,
      found: found ?? { unknown: "not looked at" },
      connection,
      ...(place.node !== undefined && { node: place.node }),
    },
    opts,
  );
}
