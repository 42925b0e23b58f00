/**
 * The Site component (`sm121:index:Site`, one per stack, named after it): the site's wiring. Its
 * children are one Deployment per deployment, the surges of replica sets (./surge), the gateway
 * file and the scrape targets; the program decides what runs where and refuses what must not run
 * (src/program.ts), the component registers it, in the order that keeps a node's serves apart.
 *
 * Earlier releases registered the Deployments, the gateway file and the scrape targets under the
 * stack itself: `childOptions` gives each the aliases of that place (their children inherit
 * them), so one up of an older stack moves them here and changes nothing on any node.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all } from "@pulumi/pulumi/output";
import { ComponentResource, rootStackResource, type Resource } from "@pulumi/pulumi/resource";
import type { Allowances, ConnectionSettings, GatewaySettings } from "../providers/settings";
import type { Recipe, Site as SiteSpec } from "../recipe/types";
import { dgppBuildScript, dgppPaths } from "../dgpp/files.render";
import type { ReplicaPlace } from "../render/replicas";
import type { DeploymentBundle, NodeConn } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import type { Owner } from "../serve/owner";
import type { FileLook } from "../serve/sitefile";
import { gatewayResource } from "./gateway";
import { known } from "./known";
import { Deployment } from "./recipe";
import { scrapeTargetsOf } from "./scrapeTargets";
import { surgeEnds, surgeStarts, type SurgePlan } from "./surge";
import { imageSyncOf, modelSyncOf } from "./sync";
import { DEPLOYMENT_TYPES_BEFORE, SITE_TYPE } from "../text/tokens";

export interface SiteWiring {
  site: SiteSpec;
  recipes: ReadonlyMap<string, Recipe>;
  /** The deployments this run serves, rendered, in the site's order. */
  bundles: readonly DeploymentBundle[];
  /** What the plan-time look saw on the nodes. */
  seen: SiteObservation;
  /** Each replica's place in its set's roll, and each set's surge (the program's decisions). */
  places: ReadonlyMap<string, ReplicaPlace>;
  surges: readonly SurgePlan[];
  connection: pulumi.Output<ConnectionSettings>;
  /** HF_TOKEN / API_KEY as Pulumi secrets; hfToken also for the model's download. */
  secrets: Record<string, pulumi.Output<string>>;
  hfToken?: pulumi.Output<string>;
  allow: Allowances;
  preflight: boolean;
  owner: Owner;
  gateway?: GatewaySettings;
  gatewayNode?: { name: string; conn: NodeConn };
  /** The files sm121 keeps on a node, as the look found them. */
  found: { gateway?: FileLook; scrape?: FileLook };
  provider: pulumi.ProviderResource;
}

export class Site extends ComponentResource {
  /** One component per deployment, in the order of the wiring's bundles. */
  readonly deployments: Deployment[];
  /** Resolves once the engine has answered the registration of every child. */
  readonly registered: Promise<unknown>;

  constructor(name: string, w: SiteWiring, opts?: pulumi.ComponentResourceOptions) {
    super(SITE_TYPE, name, {}, opts);
    const { site, bundles, seen } = w;
    const surgeWiring = {
      site,
      bundles,
      secrets: w.secrets,
      connection: w.connection,
      apiKey: "API_KEY" in w.secrets,
      owner: w.owner,
      // A kind of resource no earlier release registered: no alias of a place before the Site.
      opts: { provider: w.provider, parent: this },
      ...(w.gateway !== undefined && { gateway: w.gateway }),
    };
    const starts = surgeStarts(surgeWiring, w.surges);
    const made = new Map<string, Deployment>();
    for (const [b, before] of serveOrder(bundles, seen, w.places)) {
      const start = starts.get(b.deployment);
      const after = [...before.map((d) => made.get(d)?.engine ?? []).flat(), ...(start === undefined ? [] : [start])];
      made.set(b.deployment, this.deployment(w, b, after));
    }
    const ends = surgeEnds(surgeWiring, w.surges, starts, (d) => made.get(d)?.engine);
    this.deployments = bundles.flatMap((b) => made.get(b.deployment) ?? []);
    const urns = this.deployments.map((d) => d.engine.urn);
    const gateway = gatewayResource({
      site,
      bundles,
      outcomes: this.deployments.map((d) => d.engine.outcome),
      connection: w.connection,
      ...(w.gatewayNode !== undefined && { node: w.gatewayNode }),
      apiKey: "API_KEY" in w.secrets,
      lingering: seen.lingering,
      ...(w.found.gateway !== undefined && { found: w.found.gateway }),
      opts: this.childOptions({ provider: w.provider, dependsOn: ends }),
    });
    if (gateway !== undefined) urns.push(gateway.urn);
    const scrapeOpts = this.childOptions({ provider: w.provider });
    const scrape = scrapeTargetsOf(site, bundles, w.found.scrape, w.connection, scrapeOpts);
    if (scrape !== undefined) urns.push(scrape.urn);
    this.registered = known(all(urns));
    this.registerOutputs({});
  }

  /** One deployment's component, with what it needs of the site. */
  private deployment(w: SiteWiring, bundle: DeploymentBundle, after: Resource[]): Deployment {
    const recipe = w.recipes.get(bundle.recipe);
    const dgpp = dgppOf(w.site, recipe, bundle.nodes[0]?.stateDir ?? "");
    const model = modelSyncOf(w.site, recipe, bundle);
    const image = imageSyncOf(w.site, recipe, bundle);
    const unknown = w.seen.unknown[bundle.deployment];
    const replica = w.places.get(bundle.deployment);
    return new Deployment(
      bundle.deployment,
      {
        bundle,
        connection: w.connection,
        // Each value secret, the keys plain: the plan names a rotated secret, never its value.
        secrets: w.secrets,
        apiKey: "API_KEY" in w.secrets,
        allow: w.allow,
        preflight: w.preflight,
        drift: w.seen.drift[bundle.deployment] ?? [],
        health: w.seen.health[bundle.deployment] ?? [],
        liveness: { maxRestarts: w.site.liveness.maxRestarts, windowS: w.site.liveness.windowS },
        findings: w.seen.preflight[bundle.deployment] ?? { fatal: [], warnings: [] },
        after,
        ...(replica !== undefined && { replica }),
        ...(unknown !== undefined && { unknown }),
        ...(w.gateway !== undefined && { gateway: w.gateway }),
        ...(dgpp !== undefined && { dgpp }),
        ...(w.site.hooks === "pulumi-command" && { hookCommands: { knownHosts: w.site.knownHosts } }),
        ...(model !== undefined && { model, ...(w.hfToken !== undefined && { hfToken: w.hfToken }) }),
        ...(image !== undefined && { image }),
        owner: w.owner,
        keepBackups: w.site.keepBackups,
      },
      this.childOptions({ providers: [w.provider] }, DEPLOYMENT_TYPES_BEFORE),
    );
  }

  /**
   * A child's options: this component as its parent, and its names before it had one (under the
   * stack, with each type it had there).
   */
  childOptions<T extends pulumi.ComponentResourceOptions | pulumi.CustomResourceOptions>(
    opts: T,
    typesBefore: readonly string[] = [],
  ): T {
    const aliases: Array<pulumi.Input<string | pulumi.Alias>> = [
      ...(opts.aliases ?? []),
      { parent: rootStackResource },
      ...typesBefore.map((type) => ({ type, parent: rootStackResource })),
    ];
    return { ...opts, parent: this, aliases };
  }
}

/** DGPP recipes get their provisioning: the pin (when set) and where DGPP lives on the nodes. */
function dgppOf(site: SiteSpec, r: Recipe | undefined, headDir: string) {
  // A [dgpp] block is refused on any other engine's recipe (the dgpp driver's recipe rules).
  if (r?.dgpp === undefined) return undefined;
  const pinned = r.dgpp.repo !== undefined && r.dgpp.rev !== undefined;
  const pin = pinned && { rev: r.dgpp.rev, buildScript: dgppBuildScript(r) };
  return { paths: dgppPaths(r, headDir), pollS: site.dgppPollS, capS: 90 * 60, ...pin };
}

/**
 * The order the deployments register in, each with the deployments it comes after. Deployments on
 * protected nodes come after the others, so that a destroy meets their refusal before it stops
 * anything else; deployments the look could not see come last, after every other one (nothing
 * happens to them, and the run fails for them at the end); a deployment that shares a node with one
 * made before comes after it (one serve at a time holds a node); a replica comes after the one
 * before it in its set's roll.
 */
function serveOrder(
  bundles: readonly DeploymentBundle[],
  seen: SiteObservation,
  places: ReadonlyMap<string, ReplicaPlace>,
): Array<[DeploymentBundle, string[]]> {
  const guarded = (b: DeploymentBundle) => b.nodes.some((n) => n.protected);
  const unseen = (b: DeploymentBundle) => seen.unknown[b.deployment] !== undefined;
  const seenFirst = bundles.filter((b) => !unseen(b));
  const order = [...seenFirst.filter((b) => !guarded(b)), ...seenFirst.filter(guarded), ...bundles.filter(unseen)];
  return order.map((b, i) => [
    b,
    order
      .slice(0, i)
      .filter((other) => {
        const open = !guarded(other) && !unseen(other);
        const shares = other.nodes.some((n) => b.nodes.some((m) => m.node === n.node));
        return unseen(b) || (guarded(b) && open) || shares || places.get(b.deployment)?.after === other.deployment;
      })
      .map((other) => other.deployment),
  ]);
}
