/**
 * The files sm121 keeps beside the engines, as the plan wires them: the gateway's backends (the
 * GatewayFragment) and Prometheus' scrape targets (ScrapeTargets), each where the site puts it, with
 * the deployments it lists as declared and the file as the look found it.
 */
import { endpointKey } from "../engines";
import type { Site } from "../recipe/types";
import type { GatewayModel } from "../gateway/file.render";
import { isLoopback } from "../render/node";
import { nodeConn } from "../render/node";
import { modelOf } from "../render/replicas";
import { scrapeFile } from "../render/scrapeTargets";
import type { DeploymentBundle } from "../render/types";
import type { FileLook, Placed } from "../serve/sitefile";
import type { GatewaySettings } from "../providers/settings";
import type { GatewayPlan, ScrapePlan } from "./types";

/** A deployment's entry in the gateway file, as declared: its model name and its nodes' endpoints. */
export function gatewayModelOf(site: Site, b: DeploymentBundle): GatewayModel {
  return {
    deployment: b.deployment,
    model: modelOf(site, b),
    status: "serving",
    // An engine that takes no key is sent none (engines endpointKey).
    ...(endpointKey(b) === "none" && { keyless: true }),
    endpoints: b.nodes.flatMap((n) =>
      n.api === undefined
        ? []
        : [
            {
              node: n.node,
              url: site.nodes[n.node]?.gatewayUrl ?? n.api.url,
              // Loopback binds only answer on the node itself (spark2 with BIND=127.0.0.1, seed 001).
              reachable: n.api.host === n.ip || !isLoopback(n.api.host) || site.gateway?.node === n.node,
            },
          ],
    ),
  };
}

/** Where the gateway file goes: on a node of the site, or on the machine that runs Pulumi. */
export function gatewayPlace(site: Site): GatewaySettings | undefined {
  const gw = site.gateway;
  if (gw === undefined) return undefined;
  const node = gw.node === undefined ? undefined : site.nodes[gw.node];
  const settings: GatewaySettings = { path: gw.path, format: gw.format };
  if (gw.node !== undefined && node !== undefined) settings.node = { name: gw.node, conn: nodeConn(node) };
  return settings;
}

/** The gateway file's wiring: the deployments as declared, the lingering ones, the file as the look found it. */
export function gatewayPlan(
  site: Site,
  bundles: readonly DeploymentBundle[],
  lingering: string[],
  look: FileLook | undefined,
): GatewayPlan | undefined {
  const settings = gatewayPlace(site);
  if (settings === undefined) return undefined;
  // "" when there is no file; left out when the look could not see it (nothing to compare).
  const found = look === undefined || "unknown" in look ? undefined : (look.sha256 ?? "");
  const models = bundles.map((b) => gatewayModelOf(site, b));
  return { settings, model: site.gateway?.model, models, lingering, found };
}

/** Where the scrape targets file goes, when the site asks for one. */
export function scrapePlace(site: Site): Placed | undefined {
  const s = site.scrapeTargets;
  if (s === undefined) return undefined;
  const node = s.node === undefined ? undefined : site.nodes[s.node];
  const place: Placed = { path: s.path };
  if (s.node !== undefined && node !== undefined) place.node = { name: s.node, conn: nodeConn(node) };
  return place;
}

/** The scrape targets of the deployments this run serves (a downed or removed one has none). */
export function scrapePlan(
  site: Site,
  bundles: readonly DeploymentBundle[],
  look: FileLook | undefined,
): ScrapePlan | undefined {
  const place = scrapePlace(site);
  if (place === undefined) return undefined;
  return { ...place, file: scrapeFile(bundles, place.node?.name), found: look ?? { unknown: "not looked at" } };
}
