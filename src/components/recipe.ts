/**
 * The Recipe component (`sm121:index:Recipe`): one per deployment. Its children, named from it:
 * `<name>-engine` (EngineDeployment), and per node the host hooks and, for DGPP, the provisioning.
 */
import * as pulumi from "@pulumi/pulumi";
import { EngineDeployment, type Allowances, type ConnectionSettings } from "../providers/engineDeployment";
import type { DeploymentBundle } from "../render/types";

export interface RecipeArgs {
  /** The rendered deployment (render at plan time, execute at apply time). */
  bundle: DeploymentBundle;
  connection: pulumi.Input<ConnectionSettings>;
  /** HF_TOKEN / API_KEY as Pulumi secrets. */
  secrets: pulumi.Input<Record<string, pulumi.Input<string>>>;
  allow: Allowances;
}

export class Recipe extends pulumi.ComponentResource {
  /** The OpenAI endpoints that answer, one per serving node. */
  declare readonly endpoints: pulumi.Output<string[]>;
  declare readonly servedModel: pulumi.Output<string | undefined>;
  declare readonly status: pulumi.Output<string>;
  readonly engine: EngineDeployment;

  constructor(name: string, args: RecipeArgs, opts?: pulumi.ComponentResourceOptions) {
    super("sm121:index:Recipe", name, {}, opts);
    this.engine = new EngineDeployment(`${name}-engine`, {
      bundle: args.bundle,
      connection: args.connection,
      secrets: args.secrets,
      allow: args.allow,
    }, { parent: this });
    const outcome = this.engine.outcome;
    const endpoints = outcome.apply((o) => (o?.nodes ?? []).flatMap((n) => (n.endpoint === undefined ? [] : [n.endpoint])));
    const servedModel = outcome.apply((o) => o?.servedModel);
    const status = outcome.apply((o) => o?.status ?? "unknown");
    Object.assign(this, { endpoints, servedModel, status });
    this.registerOutputs({ endpoints, servedModel, status });
  }
}
