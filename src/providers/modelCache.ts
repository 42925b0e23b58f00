/**
 * ModelCache: a model's checkpoint, complete, in the HF cache of every node of a deployment
 * (`<HF_HOME>/hub/models--<org>--<name>`), before the engine that loads it starts.
 *
 * - create/update: lists the cache on every node; when no node holds the revision complete, it is
 *           downloaded once on rank 0 (`hf download`, HF_TOKEN from sm121:hfToken in the script's
 *           environment, never in argv); then each node that lacks files gets them from a node
 *           that has them, node to node over ssh (serve/fanout), partial files continued; every
 *           node is verified by file list and sizes against the source (and the safetensors index).
 * - diff:   pure: the repo, the revision (the recipe's --revision pin, else main), the nodes and
 *           their caches; and what the last refresh found missing. A complete cache is never
 *           downloaded again; the resolved commit is recorded. A node's new ssh address or a new
 *           delete mode is an update that touches no node.
 * - delete: leaves the cache on the nodes and says so, unless the site says
 *           `sm121:modelCache: remove` (protected nodes keep theirs).
 * - read:   which nodes lack files of the recorded commit now.
 */
import type * as pulumi from "@pulumi/pulumi";
import { ShimResource } from "./shim";
import type { CacheNode } from "../serve/modelcache";
import type { ConnectionSettings } from "./settings";

export interface ModelCacheInputs {
  deployment: pulumi.Input<string>;
  repo: pulumi.Input<string>;
  revision: pulumi.Input<string>;
  /** Rank 0 first: it downloads when no node has the model. */
  nodes: pulumi.Input<CacheNode[]>;
  /** Nodes whose cache a delete with `remove` leaves alone. */
  protectedNodes: pulumi.Input<string[]>;
  onDelete: pulumi.Input<"keep" | "remove">;
  connection: pulumi.Input<ConnectionSettings>;
  /** sm121:hfToken, for gated models. */
  hfToken?: pulumi.Input<string>;
}

export class ModelCache extends ShimResource {
  /** The commit the revision resolved to when the cache was made complete. */
  declare readonly commit: pulumi.Output<string>;
  declare readonly bytes: pulumi.Output<number>;

  constructor(name: string, args: ModelCacheInputs, opts?: pulumi.CustomResourceOptions) {
    super(
      "ModelCache",
      name,
      { ...args, commit: undefined, files: undefined, bytes: undefined, source: undefined, incomplete: undefined },
      { ...opts, additionalSecretOutputs: ["connection", "hfToken"] },
    );
  }
}
