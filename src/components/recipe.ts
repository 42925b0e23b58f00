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
import type { ConnectionSettings } from "../providers/settings";
import { engineSequenceBundle } from "../render/deployment";
import type { DeploymentPlan, RunWiring } from "../plan/types";
import { DEPLOYMENT_TYPE, DEPLOYMENT_TYPES_BEFORE } from "../text/tokens";

export interface DeploymentArgs {
  /** Its part of the plan (src/plan): the rendered bundle, what the look found, its place in a roll. */
  plan: DeploymentPlan;
  /** What every resource of this run gets (the allowances, the gateway file, the owner). */
  run: RunWiring;
  connection: pulumi.Input<ConnectionSettings>;
  /** HF_TOKEN / API_KEY as Pulumi secrets (each value secret, the keys plain: the plan names a rotated secret). */
  secrets: Record<string, pulumi.Input<string>>;
  /** Engines this one comes after (and, on destroy, goes before). */
  after: pulumi.Resource[];
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
    const { plan: p, run, connection, secrets } = args;
    const b = p.bundle;
    const deps: pulumi.Resource[] = [];
    const unknown = (p.found.unknown ?? []).length > 0;
    // Nothing of an unknown deployment changes in this run, and it comes after every other one.
    const held: pulumi.CustomResourceOptions = unknown ? { ignoreChanges: ["*"], dependsOn: args.after } : {};
    const children = { parent: this, ...held };
    if (p.model !== undefined) {
      const hfToken = secrets["HF_TOKEN"];
      const inputs = { deployment: b.deployment, ...p.model, connection, hfToken };
      deps.push(new ModelCache(`${name}-model`, inputs, children));
    }
    if (p.image !== undefined) {
      deps.push(new ImageSync(`${name}-image`, { deployment: b.deployment, ...p.image, connection }, children));
    }
    if (p.dgpp !== undefined) {
      const { paths, pollS, capS, rev, buildScript } = p.dgpp;
      const inputs = { bundle: b, recipe: b.recipe, paths, pollS, capS, connection, rev, buildScript };
      deps.push(new DgppProvision(`${name}-dgpp`, inputs, children));
    }
    const hooks = run.hookCommands;
    if (hooks !== undefined) {
      const drift = p.found.drift;
      const restart = run.allow.restart;
      const inputs = { bundle: b, connection, secrets, knownHosts: hooks.knownHosts, drift, restart };
      deps.push(...hookCommands(name, inputs, this));
    }
    this.engine = new EngineDeployment(
      `${name}-engine`,
      {
        deployment: b.deployment,
        preflight: run.preflight,
        gateway: run.gateway,
        bundle: engineSequenceBundle(b, hooks === undefined ? "engine" : "pulumi-command"),
        connection,
        secrets,
        apiKey: run.apiKey,
        allow: run.allow,
        drift: p.found.drift,
        findings: p.found.findings,
        owner: run.owner,
        keepBackups: run.keepBackups,
        health: p.found.health,
        liveness: run.liveness,
        replica: p.replica,
        unknown: unknown ? p.found.unknown : undefined,
      },
      {
        parent: this,
        dependsOn: [...deps, ...args.after],
        ignoreChanges: unknown ? [...HELD_INPUTS] : undefined,
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

  /** Its stack output (src/program.ts). */
  outputs(): Record<string, pulumi.Output<unknown>> {
    const { endpoints, servedModel, status, firstToken } = this;
    return { endpoints, servedModel, status, firstToken };
  }
}
