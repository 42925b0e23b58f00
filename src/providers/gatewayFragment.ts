/**
 * GatewayFragment: the gateway backend file, rewritten on every up from the deployments' outputs.
 *
 * - create/update: writes the file (a backup of a different old one first) on the machine that
 *   runs Pulumi, or on a node of the site; says which gateway restart applies it.
 * - diff:   the content's sha256.
 * - delete: removes the file.
 * - read:   whether the file still has the content written.
 */
import type * as pulumi from "@pulumi/pulumi";
import { ShimResource } from "./shim";
import type { NodeConn } from "../render/types";
import type { ConnectionSettings } from "./engineDeployment";

export interface GatewayFragmentInputs {
  path: pulumi.Input<string>;
  format: pulumi.Input<string>;
  content: pulumi.Input<string>;
  warnings: pulumi.Input<string[]>;
  restartNote: pulumi.Input<string>;
  /** Write on this node instead of the machine that runs Pulumi. */
  node?: pulumi.Input<{ name: string; conn: NodeConn }>;
  connection: pulumi.Input<ConnectionSettings>;
}

export class GatewayFragment extends ShimResource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: GatewayFragmentInputs, opts?: pulumi.CustomResourceOptions) {
    super("gatewayImpl", "GatewayFragment", name, { ...args, sha256: undefined }, { ...opts, additionalSecretOutputs: ["connection"] });
  }
}
