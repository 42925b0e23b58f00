/**
 * HostCommand: a recipe's host hook on one node, in the shape of @pulumi/command's remote.Command
 * (create / delete commands, same connection settings and host key checking).
 *
 * - create/update: runs the `create` commands (a before_serve hook); re-runs when their text changes.
 * - delete: runs the `delete` commands (an after_stop hook).
 * - read: nothing to read on the host; the state is what ran.
 */
import * as pulumi from "@pulumi/pulumi";
import { providerFor } from "./shim";
import type { NodeConn } from "../render/types";
import type { ConnectionSettings } from "./engineDeployment";

export interface HostCommandInputs {
  node: pulumi.Input<string>;
  conn: pulumi.Input<NodeConn>;
  connection: pulumi.Input<ConnectionSettings>;
  create: pulumi.Input<string[]>;
  delete: pulumi.Input<string[]>;
}

export class HostCommand extends pulumi.dynamic.Resource {
  declare readonly ranAt: pulumi.Output<string | undefined>;

  constructor(name: string, args: HostCommandInputs, opts?: pulumi.CustomResourceOptions) {
    super(providerFor(require.resolve("./hostCommandImpl")), name, { ...args, ranAt: undefined, output: undefined }, { ...opts, additionalSecretOutputs: ["connection"] }, "sm121", "HostCommand");
  }
}
