/**
 * DgppProvision: DGPP at a pinned rev on the launch nodes of a deployment (seed 000).
 *
 * - create/update: stage the cluster JSON and .env on every launch node; then, with repo + rev,
 *   build and install on rank 0 in tmux session sm121-dgpp-<recipe> (log
 *   /tmp/<recipe>-dgpp-build.log), unless <dir>/.sm121-dgpp-rev already says the rev.
 * - diff:   the rev and the staged files' identity; a rev bump is a new generation.
 * - delete: leaves the installed release on the nodes, and says so.
 * - read:   the marker on rank 0.
 *
 * `pulumi preview --diff` shows the rev and the staged files with their sha256 prefix; the
 * deployment's bundle travels packed under `__bundle`, which Pulumi never displays (./packed).
 */
import type * as pulumi from "@pulumi/pulumi";
import { all, output } from "@pulumi/pulumi/output";
import { packedBundle, ShimResource } from "../providers/shim";
import { stagedLines, type DgppPaths } from "./files.render";
import type { DeploymentBundle } from "../render/types";
import type { ConnectionSettings } from "../providers/settings";

export interface DgppProvisionInputs {
  bundle: pulumi.Input<DeploymentBundle>;
  recipe: pulumi.Input<string>;
  paths: pulumi.Input<DgppPaths>;
  rev?: pulumi.Input<string>;
  buildScript?: pulumi.Input<string>;
  /** Seconds between polls of the build (30 on real nodes). */
  pollS: pulumi.Input<number>;
  /** The build's cap in seconds (90 minutes). */
  capS: pulumi.Input<number>;
  connection: pulumi.Input<ConnectionSettings>;
}

export class DgppProvision extends ShimResource {
  declare readonly marker: pulumi.Output<string | undefined>;

  constructor(name: string, args: DgppProvisionInputs, opts?: pulumi.CustomResourceOptions) {
    const { bundle, ...shown } = args;
    const b = output(bundle);
    const staged = all([b, args.paths]).apply(([d, paths]) => stagedLines(d, paths));
    super(
      "DgppProvision",
      name,
      { ...shown, staged, __bundle: b.apply(packedBundle), marker: undefined, built: undefined },
      { ...opts, additionalSecretOutputs: ["connection"] },
    );
  }
}
