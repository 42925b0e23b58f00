/**
 * The gateway file's resource (`gateway`, a GatewayFragment), wired from the deployments: their
 * endpoints as declared (the plan), as served (each engine's served model and status), the
 * deployments the site no longer declares that the look still found on their nodes (kept in the
 * file, disabled), and the file's sha256 as the look found it (an edited or deleted file is written
 * again by a plain up).
 */
import type * as pulumi from "@pulumi/pulumi";
import { all } from "@pulumi/pulumi/output";
import { endpointKey } from "../engines";
import { GatewayFragment } from "../providers/gatewayFragment";
import type { ConnectionSettings } from "../providers/settings";
import type { Site } from "../recipe/types";
import { isLoopback, type GatewayModel } from "../render/gateway";
import { modelOf } from "../render/replicas";
import type { DeploymentBundle, NodeConn } from "../render/types";
import type { StoredOutcome } from "../serve/outcome";
import type { FileLook } from "../serve/sitefile";

export interface GatewayWiring {
  site: Site;
  bundles: readonly DeploymentBundle[];
  /** Each deployment's outcome, in the order of `bundles`. */
  outcomes: ReadonlyArray<pulumi.Output<StoredOutcome>>;
  connection: pulumi.Input<ConnectionSettings>;
  node?: { name: string; conn: NodeConn };
  apiKey: boolean;
  lingering: string[];
  /** The file as the plan-time look found it (its sha256, none, or why it could not look). */
  found?: FileLook;
  /** Its provider and its place (the Site component). */
  opts: pulumi.CustomResourceOptions;
}

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

export function gatewayResource(w: GatewayWiring): GatewayFragment | undefined {
  const gw = w.site.gateway;
  if (gw === undefined) return undefined;
  // As declared (the plan, known before any engine is served); the file takes each served model and status.
  const models: GatewayModel[] = w.bundles.map((b) => gatewayModelOf(w.site, b));
  const outcomes = all([...w.outcomes]);
  const current = outcomes.apply((outs) =>
    models.map((m, i) => ({
      ...m,
      model: gw.model ?? outs[i]?.servedModel ?? m.model,
      status: outs[i]?.status ?? "unknown",
    })),
  );
  // "" when there is no file; left out when the look could not see it (nothing to compare).
  const found = w.found === undefined || "unknown" in w.found ? undefined : (w.found.sha256 ?? "");
  return new GatewayFragment(
    "gateway",
    {
      path: gw.path,
      format: gw.format,
      models,
      current,
      apiKey: w.apiKey,
      lingering: w.lingering,
      ...(found !== undefined && { found }),
      served: outcomes,
      connection: w.connection,
      ...(w.node !== undefined && { node: w.node }),
    },
    w.opts,
  );
}
