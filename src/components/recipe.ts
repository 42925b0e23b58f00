/**
 * The Deployment component (`sm121:index:Deployment`; `sm121:index:Recipe` before, see ./tokens):
 * one per deployment. Its children are named from it:
 * `<name>-model` (ModelCache, with sm121:modelCache), `<name>-image` (ImageSync, docker recipes
 * with sm121:imageSync), `<name>-dgpp` (DgppProvision, DGPP only) and `<name>-engine`
 * (EngineDeployment), which depends on all of them. The recipe's hooks run inside the engine's
 * sequence, before every start and after every stop; with `sm121:hooks: pulumi-command`, they run
 * as `<name>-hooks-<node>` Commands instead, which the engine also depends on (./hookCommands,
 * loaded only then: the default needs no plugin).
 */
import type * as pulumi from "@pulumi/pulumi";
import { hookCommands } from "./hookCommands";
import { ComponentResource } from "@pulumi/pulumi/resource";
import { DgppProvision } from "../dgpp/resource.providers";
import { ImageSync } from "../providers/imageSync";
import { ModelCache } from "../providers/modelCache";
import { EngineDeployment, HELD_INPUTS } from "../providers/engineDeployment";
import type { Allowances, ConnectionSettings, GatewaySettings } from "../providers/settings";
import type { DgppPaths } from "../dgpp/files.render";
import { engineSequenceBundle } from "../render/deployment";
import type { DeploymentBundle } from "../render/types";
import type { ImageSyncPlan, ModelSync } from "./sync";
import type { Owner } from "../serve/owner";
import { DEPLOYMENT_TYPE, DEPLOYMENT_TYPES_BEFORE } from "../text/tokens";
import type { ReplicaPlace } from "../render/replicas";
import type { Findings } from "../providers/wire";
import type { Msg } from "../text/messages";

export interface DeploymentArgs {
  /** The rendered deployment (render at plan time, execute at apply time). */
  bundle: DeploymentBundle;
  connection: pulumi.Input<ConnectionSettings>;
  /** HF_TOKEN / API_KEY as Pulumi secrets. */
  secrets: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** sm121:apiKey is set (the plan says when this deployment's endpoint does not take it). */
  apiKey: boolean;
  allow: Allowances;
  /** Run the read-only node checks at plan time. */
  preflight: boolean;
  /** The gateway file, for the failure path (its endpoints disabled at once). */
  gateway?: GatewaySettings;
  /** What the plan-time look at the nodes found for this deployment (serve/observe). */
  drift: Msg[];
  /** The part of `drift` that is the engine's health, and sm121:liveness's bound on its restarts. */
  health?: Msg[];
  liveness?: { maxRestarts: number; windowS: number };
  /**
   * The nodes the look could not see (one message each): every child keeps its stored inputs and comes
   * after `after`, so that this run does nothing to the deployment while the others go on.
   */
  unknown?: Msg[];
  findings: pulumi.Input<Findings>;
  /** Its place in its replica set's roll (render/replicas). */
  replica?: ReplicaPlace;
  /** Engines this one comes after (and, on destroy, goes before). */
  after?: pulumi.Resource[];
  /** DGPP recipes: where it lives on the nodes, and the pin to provision (none: pre-installed). */
  dgpp?: { paths: DgppPaths; rev?: string; buildScript?: string; pollS: number; capS: number };
  /**
   * `sm121:hooks: pulumi-command`: the hooks run as @pulumi/command resources; `knownHosts` pins
   * each node's host key.
   */
  hookCommands?: { knownHosts: string };
  /** The checkpoint on every node before the engine starts (./sync modelSyncOf). */
  model?: ModelSync;
  /** The image, one ID on every node, before the engine starts (./sync imageSyncOf). */
  image?: ImageSyncPlan;
  /** sm121:hfToken, for the model's download. */
  hfToken?: pulumi.Input<string>;
  /** The stack this deployment belongs to, recorded on its nodes. */
  owner?: Owner;
  /** sm121:keepBackups. */
  keepBackups?: number;
}

export class Deployment extends ComponentResource {
  /** The OpenAI endpoints that answer, one per serving node. */
  declare readonly endpoints: pulumi.Output<string[]>;
  declare readonly servedModel: pulumi.Output<string | undefined>;
  declare readonly status: pulumi.Output<string>;
  /** Per serving node: seconds to ready (the first token of a one-token chat) and that token's time in ms. */
  declare readonly firstToken: pulumi.Output<Array<{ node: string; readyS: number; ttftMs: number }>>;
  readonly engine: EngineDeployment;

  constructor(name: string, args: DeploymentArgs, opts?: pulumi.ComponentResourceOptions) {
    const aliases = [...(opts?.aliases ?? []), ...DEPLOYMENT_TYPES_BEFORE.map((type) => ({ type }))];
    super(DEPLOYMENT_TYPE, name, {}, { ...opts, aliases });
    const b = args.bundle;
    const deps: pulumi.Resource[] = [];
    const unknown = (args.unknown ?? []).length > 0;
    // Nothing of an unknown deployment changes in this run, and it comes after every other one.
    const held: pulumi.CustomResourceOptions = unknown ? { ignoreChanges: ["*"], dependsOn: args.after ?? [] } : {};
    if (args.model !== undefined) {
      deps.push(
        new ModelCache(
          `${name}-model`,
          {
            deployment: b.deployment,
            ...args.model,
            connection: args.connection,
            ...(args.hfToken !== undefined && { hfToken: args.hfToken }),
          },
          { parent: this, ...held },
        ),
      );
    }
    if (args.image !== undefined) {
      const inputs = { deployment: b.deployment, ...args.image, connection: args.connection };
      deps.push(new ImageSync(`${name}-image`, inputs, { parent: this, ...held }));
    }
    if (args.dgpp !== undefined) {
      deps.push(
        new DgppProvision(
          `${name}-dgpp`,
          {
            bundle: b,
            recipe: b.recipe,
            paths: args.dgpp.paths,
            pollS: args.dgpp.pollS,
            capS: args.dgpp.capS,
            connection: args.connection,
            ...(args.dgpp.rev !== undefined && { rev: args.dgpp.rev }),
            ...(args.dgpp.buildScript !== undefined && { buildScript: args.dgpp.buildScript }),
          },
          { parent: this, ...held },
        ),
      );
    }
    if (args.hookCommands !== undefined) {
      deps.push(
        ...hookCommands(
          name,
          {
            bundle: b,
            connection: args.connection,
            secrets: args.secrets,
            knownHosts: args.hookCommands.knownHosts,
            drift: args.drift,
            restart: args.allow.restart,
          },
          this,
        ),
      );
    }
    this.engine = new EngineDeployment(
      `${name}-engine`,
      {
        deployment: b.deployment,
        preflight: args.preflight,
        ...(args.gateway !== undefined && { gateway: args.gateway }),
        bundle: engineSequenceBundle(b, args.hookCommands === undefined ? "engine" : "pulumi-command"),
        connection: args.connection,
        secrets: args.secrets,
        apiKey: args.apiKey,
        allow: args.allow,
        drift: args.drift,
        findings: args.findings,
        ...(args.owner !== undefined && { owner: args.owner }),
        ...(args.keepBackups !== undefined && { keepBackups: args.keepBackups }),
        ...(args.health !== undefined && { health: args.health }),
        ...(args.liveness !== undefined && { liveness: args.liveness }),
        ...(args.replica !== undefined && { replica: args.replica }),
        ...(unknown && { unknown: args.unknown }),
      },
      {
        parent: this,
        dependsOn: [...deps, ...(args.after ?? [])],
        ...(unknown && { ignoreChanges: [...HELD_INPUTS] }),
      },
    );
    const outcome = this.engine.outcome;
    const endpoints = outcome.apply((o) =>
      (o?.nodes ?? []).flatMap((n) => (n.endpoint === undefined ? [] : [n.endpoint])),
    );
    const servedModel = outcome.apply((o) => o?.servedModel);
    const status = outcome.apply((o) => o?.status ?? "unknown");
    const firstToken = outcome.apply((o) =>
      (o?.nodes ?? []).flatMap((n) =>
        n.readyS === undefined || n.ttftMs === undefined ? [] : [{ node: n.node, readyS: n.readyS, ttftMs: n.ttftMs }],
      ),
    );
    Object.assign(this, { endpoints, servedModel, status, firstToken });
    // The outputs are the stack's (program.ts), not the component's: registered now, with nothing
    // that waits on the engine. Outputs that waited on it went to the engine after the engine's
    // step, and when another deployment's step had failed by then, the engine had stopped taking
    // them: the SDK then printed the gRPC error ("resource monitor shut down while sending
    // resource outputs") as a stack trace, in colour whatever NO_COLOR said (docs/up.md).
    this.registerOutputs({});
  }
}
