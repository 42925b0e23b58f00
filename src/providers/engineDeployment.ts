/**
 * EngineDeployment: one deployment (one serving group) of a recipe on its nodes.
 *
 * Lifecycle on the hosts (the work is in ./engineImpl, loaded at run time):
 * - check:  refuses a restart on a protected node unless allowed for this run
 *           (SM121_ALLOW_PROTECTED=spark1), render-only profiles, experimental profiles without
 *           SM121_EXPERIMENTAL=1, and (sm121:preflight) what the plan-time look found fatal. A
 *           deployment the look could not reach (`unknown`) is refused nothing: nothing happens to it.
 * - diff:   pure (./engineDecide): a changed bundle identity, drift found on the nodes at plan
 *           time, a rotated secret, a failed last up or SM121_RESTART is an update that restarts
 *           (restarts for the engine's health are bounded by sm121:liveness); a changed ssh
 *           address or per-node safety setting (protected) is an update that restarts nothing; a
 *           changed node list, rank order or target is a replace (delete before replace); an
 *           `unknown` deployment has no change (the program fails the run for it at the end).
 * - create/update: seed 001's sequence on every node (preflight, stop -- first whatever other
 *           deployment the node still runs -- and after_stop hooks, memory gate, write with
 *           backup, before_serve hooks, start, /v1/models, verify). A failure after the stop
 *           marks it failed in state, with the node's own evidence.
 * - delete: refuses protected nodes without SM121_ALLOW_PROTECTED (nothing stopped), then stops
 *           every node, runs after_stop and verifies it, from the stored outputs alone; a node
 *           another deployment has taken since is left alone. A stop that fails on a node fails
 *           the delete (the resource stays), and the node keeps a record of it (serve/stop).
 * - read:   is it running, do the files on the node still match what was written, did a stop fail.
 *
 * What `pulumi preview --diff` shows of it is the plan (render/plan: the image, the flags, the
 * keys, the files with their sha256 prefix, one fact a line), the drift found on its nodes and,
 * as `[secret]`, its secrets and connection; the rendered bundle and this run's settings travel
 * packed under keys Pulumi never displays (./engineWire).
 *
 * The provider object is serialized into the state; it stays a thin shim so that it serializes
 * reliably (no library objects captured) and always runs the current implementation.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all, output } from "@pulumi/pulumi/output";
import { packedBundle, ShimResource } from "./shim";
import { deploymentPlan } from "../render/plan";
import type { DeploymentBundle } from "../render/types";
import type { StoredOutcome } from "../serve/outcome";
import type { Owner } from "../serve/owner";
import type { ReplicaPlace } from "../render/replicas";
import { say, type Msg } from "../text/messages";
import type { EngineWire, Findings } from "./wire";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./settings";

export interface EngineDeploymentInputs {
  /** The deployment's name: what plan-time refusals are reported against. */
  deployment: pulumi.Input<string>;
  /** Run the read-only node checks at plan time (a preview with `sm121:preflight: true`). */
  preflight?: pulumi.Input<boolean>;
  bundle: pulumi.Input<DeploymentBundle>;
  connection: pulumi.Input<ConnectionSettings>;
  /** HF_TOKEN / API_KEY set as Pulumi secrets. */
  secrets: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** sm121:apiKey is set: the plan says when this endpoint does not take it (render/plan keyNote). */
  apiKey?: boolean;
  allow: pulumi.Input<Allowances>;
  gateway?: pulumi.Input<GatewaySettings>;
  /** What the plan-time look at the nodes found (serve/observe): each message a reason to act. */
  drift: pulumi.Input<Msg[]>;
  /** The plan-time look's preflight findings, reported by check when `preflight` is on. */
  findings: pulumi.Input<Findings>;
  /** The stack this deployment belongs to, recorded on its nodes (serve/owner). */
  owner?: Owner;
  /** sm121:keepBackups. */
  keepBackups?: number;
  /** The part of `drift` that is the engine's health (dead or hung), and sm121:liveness's bound. */
  health?: pulumi.Input<Msg[]>;
  liveness?: pulumi.Input<{ maxRestarts: number; windowS: number }>;
  /** The look could not reach these nodes (one message each, with the error): this run leaves it alone. */
  unknown?: pulumi.Input<Msg[]>;
  /** Its place in its replica set's roll: one at a time, behind the gateway. */
  replica?: ReplicaPlace;
}

/**
 * Every input property but `unknown`: a deployment the look could not see keeps them all at their
 * stored values (the program's `ignoreChanges`), so that nothing about it changes in this run.
 */
export const HELD_INPUTS = [
  "deployment",
  "plan",
  "drift",
  "secrets",
  "connection",
  "__bundle",
  "__run",
  "outcome",
] as const satisfies ReadonlyArray<keyof EngineWire>;

export class EngineDeployment extends ShimResource {
  declare readonly plan: pulumi.Output<string>;
  declare readonly outcome: pulumi.Output<StoredOutcome>;

  constructor(name: string, args: EngineDeploymentInputs, opts?: pulumi.CustomResourceOptions) {
    const bundle = output(args.bundle);
    // Each property on its own, so that Pulumi diffs the plan's lines rather than one object; each
    // secret on its own, so that a rotation names the key (`API_KEY: [secret] => [secret]`).
    const props: Omit<{ [K in keyof EngineWire]: pulumi.Input<EngineWire[K]> }, "secrets"> &
      Pick<EngineDeploymentInputs, "secrets"> = {
      deployment: args.deployment,
      plan: all([bundle, args.allow]).apply(([b, allow]) => {
        const overrides = allow.overrides !== undefined ? { overrides: allow.overrides } : {};
        return deploymentPlan(b, { restart: allow.restart, ...overrides, apiKey: args.apiKey === true });
      }),
      // The look's findings in words for the diff; their messages ride in __run for the provider.
      drift: output(args.drift).apply((found) => found.map((m) => say(m, "en"))),
      secrets: args.secrets,
      connection: args.connection,
      __bundle: bundle.apply(packedBundle),
      __run: all([
        args.allow,
        args.preflight,
        args.findings,
        args.gateway,
        args.health,
        args.liveness,
        args.drift,
      ]).apply(([allow, preflight, findings, gateway, health, liveness, drift]) => ({
        allow,
        preflight: preflight ?? false,
        findings,
        ...(gateway !== undefined && { gateway }),
        ...(args.owner !== undefined && { owner: args.owner }),
        ...(args.keepBackups !== undefined && { keepBackups: args.keepBackups }),
        ...(health !== undefined && health.length > 0 && { health }),
        ...(liveness !== undefined && { liveness }),
        ...(args.replica !== undefined && { replica: args.replica }),
        ...(drift.length > 0 && { drift }),
      })),
      ...(args.unknown !== undefined && { unknown: args.unknown }),
      outcome: undefined,
    };
    super("EngineDeployment", name, props, {
      ...opts,
      additionalSecretOutputs: ["connection", "secrets"],
    });
  }
}
