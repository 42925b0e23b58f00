/**
 * GatewayFragment: the gateway backend file, rewritten on every up from the deployments' outputs.
 *
 * - create/update: writes the file (a backup of a different old one first) on the machine that
 *   runs Pulumi, or on a node of the site; says which gateway restart applies it.
 * - diff:   the content's sha256.
 * - delete: removes the file.
 * - read:   whether the file still has the content written.
 */
import * as pulumi from "@pulumi/pulumi";
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

/** One provider object for all resources of this kind: Pulumi serializes it once and caches it. */
let cached: pulumi.dynamic.ResourceProvider | undefined;
function gatewayProviderOnce(): pulumi.dynamic.ResourceProvider {
  cached ??= gatewayProvider(require.resolve("./gatewayImpl"));
  return cached;
}

function gatewayProvider(implPath: string): pulumi.dynamic.ResourceProvider {
  type Impl = typeof import("./gatewayImpl");
  const impl = (): Impl => require(implPath) as Impl;
  return {
    diff: (id, olds, news) => impl().diff(id, olds, news),
    create: (inputs) => impl().create(inputs),
    update: (id, olds, news) => impl().update(id, olds, news),
    delete: (id, props) => impl().remove(id, props),
    read: (id, props) => impl().read(id, props),
  };
}

export class GatewayFragment extends pulumi.dynamic.Resource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: GatewayFragmentInputs, opts?: pulumi.CustomResourceOptions) {
    super(gatewayProviderOnce(), name, { ...args, sha256: undefined }, { ...opts, additionalSecretOutputs: ["connection"] }, "sm121", "GatewayFragment");
  }
}
