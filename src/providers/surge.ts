/**
 * Surge: the two ends of a roll onto a spare group (render/surge), one resource each, around the
 * replicas of the set: `start` comes before the first replica (each replica's engine depends on
 * the one before it, the first on this), `end` after the last (it depends on them all).
 *
 * - diff:   pure: a change when the set's bundle identities changed since the last up (the change
 *           that rolls the set); nothing else.
 * - create: records the set (a first up serves nothing yet: nothing to surge for).
 * - update: `start`, when the plan said the surge goes: serves the new recipe on the spare (the
 *           up's own serve: preflight, gate, start, readiness by first token), then adds its
 *           endpoints to the gateway file. A surge that fails is stopped again, and the up fails
 *           there, before any replica stopped (the replicas depend on it). `end`, when `start`
 *           served it in this run: takes its endpoints out of the gateway file, drains it, and
 *           stops it; the spare is free again.
 * - delete: `start` stops the surge on the spare when it started it (the end may not have run:
 *           a failed replica, an interrupted up); nothing otherwise.
 * - read:   nothing on the nodes.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import type { ConnectionSettings } from "./settings";
import { packedBundle, ShimResource } from "./shim";
import type { SurgePhase, SurgeRun, SurgeStarted, SurgeWire } from "./wire";

export interface SurgeInputs {
  phase: SurgePhase;
  bundle: DeploymentBundle;
  go: boolean;
  why: string;
  set: Record<string, string>;
  secrets: pulumi.Input<Record<string, pulumi.Input<string>>>;
  connection: pulumi.Input<ConnectionSettings>;
  run: SurgeRun;
  start?: pulumi.Input<SurgeStarted>;
}

export class Surge extends ShimResource {
  declare readonly started: pulumi.Output<SurgeStarted | undefined>;

  constructor(name: string, args: SurgeInputs, opts?: pulumi.CustomResourceOptions) {
    const props: Omit<{ [K in keyof SurgeWire]: pulumi.Input<SurgeWire[K]> | undefined }, "secrets"> &
      Pick<SurgeInputs, "secrets"> = {
      phase: args.phase,
      deployment: args.bundle.deployment,
      nodes: args.bundle.nodes.map((n) => n.node),
      go: args.go,
      why: args.why,
      __set: args.set,
      secrets: args.secrets,
      connection: args.connection,
      __bundle: packedBundle(args.bundle),
      __run: args.run,
      start: args.start,
      started: undefined,
    };
    const secret = ["connection", "secrets", "started", "start"];
    super("Surge", name, props, { ...opts, additionalSecretOutputs: secret });
  }
}
