/**
 * The Site component (`sm121:index:Site`, one per stack, named after it): it registers a SitePlan
 * (src/plan: what runs where, in which order, what the look found), and decides nothing. Its
 * children are one Deployment per deployment, the surges of replica sets (./surge), the gateway
 * file and the scrape targets, in the plan's order, which keeps a node's serves apart.
 *
 * Earlier releases registered the Deployments, the gateway file and the scrape targets under the
 * stack itself: `childOptions` gives each the aliases of that place (their children inherit
 * them), so one up of an older stack moves them here and changes nothing on any node.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all } from "@pulumi/pulumi/output";
import { ComponentResource, rootStackResource } from "@pulumi/pulumi/resource";
import type { ConnectionSettings } from "../providers/settings";
import type { SitePlan } from "../plan/types";
import { gatewayResource } from "../gateway/resource.components";
import { known } from "./known";
import { Deployment } from "./recipe";
import { scrapeTargetsOf } from "./scrapeTargets";
import { surgeEnds, surgeStarts } from "./surge";
import { DEPLOYMENT_TYPES_BEFORE, SITE_TYPE } from "../text/tokens";

/** What the resources get besides the plan: how they reach the nodes, the stack's secrets, their provider. */
export interface SiteWiring {
  connection: pulumi.Output<ConnectionSettings>;
  /** HF_TOKEN / API_KEY as Pulumi secrets; HF_TOKEN also for the model's download. */
  secrets: Record<string, pulumi.Output<string>>;
  provider: pulumi.ProviderResource;
}

export class Site extends ComponentResource {
  /** One component per deployment, by name. */
  readonly deployments = new Map<string, Deployment>();
  /** Resolves once the engine has answered the registration of every child. */
  readonly registered: Promise<unknown>;

  constructor(name: string, plan: SitePlan, w: SiteWiring, opts?: pulumi.ComponentResourceOptions) {
    super(SITE_TYPE, name, {}, opts);
    const surgeWiring = {
      run: plan.run,
      secrets: w.secrets,
      connection: w.connection,
      // A kind of resource no earlier release registered: no alias of a place before the Site.
      opts: { provider: w.provider, parent: this },
    };
    const starts = surgeStarts(surgeWiring, plan.surges);
    for (const p of plan.deployments) {
      const before = p.after.flatMap((d) => this.deployments.get(d)?.engine ?? []);
      const start = starts.get(p.bundle.deployment);
      const after = start === undefined ? before : [...before, start];
      const args = { plan: p, run: plan.run, connection: w.connection, secrets: w.secrets, after };
      const d = new Deployment(
        p.bundle.deployment,
        args,
        this.childOptions({ providers: [w.provider] }, DEPLOYMENT_TYPES_BEFORE),
      );
      this.deployments.set(p.bundle.deployment, d);
    }
    const ends = surgeEnds(surgeWiring, plan.surges, starts, (d) => this.deployments.get(d)?.engine);
    const urns = [...this.deployments.values()].map((d) => d.engine.urn);
    if (plan.gateway !== undefined) {
      const outcomes = plan.gateway.models.map((m) => this.deployments.get(m.deployment)?.engine.outcome);
      const opts = this.childOptions({ provider: w.provider, dependsOn: ends });
      urns.push(gatewayResource(plan.gateway, outcomes, w.connection, plan.run.apiKey, opts).urn);
    }
    if (plan.scrape !== undefined) {
      urns.push(scrapeTargetsOf(plan.scrape, w.connection, this.childOptions({ provider: w.provider })).urn);
    }
    this.registered = known(all(urns));
    this.registerOutputs({});
  }

  /**
   * The stack's outputs, one per deployment (`served`, in the site's order): Pulumi prints a changed
   * output whole, so a plan that restarts one deployment shows that one's outputs, not every
   * deployment's in one object.
   */
  stackOutputs(served: readonly string[]): Record<string, unknown> {
    return Object.fromEntries(
      served.flatMap((name) => {
        const d = this.deployments.get(name);
        return d === undefined ? [] : [[name, d.outputs()]];
      }),
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
