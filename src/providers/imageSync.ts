/**
 * ImageSync: a docker recipe's image with one image ID on every node of a deployment.
 *
 * - create/update: `docker image inspect` on every node; the image of rank 0 (else of the first
 *           node that has it, else `docker pull` once on rank 0) is streamed
 *           `docker save | ssh <peer> docker load` node to node (serve/fanout) to each node that
 *           lacks it or holds another ID under the reference; every node is verified by ID.
 * - diff:   pure: the image reference, the nodes, and the IDs the last refresh found differing
 *           from the recorded one. A node's new ssh address is an update that touches no node.
 * - delete: leaves the image on the nodes, and says so.
 * - read:   each node's image ID now.
 */
import type * as pulumi from "@pulumi/pulumi";
import { ShimResource } from "./shim";
import type { ImageNode } from "../serve/imagesync";
import type { ConnectionSettings } from "./settings";

export interface ImageSyncInputs {
  deployment: pulumi.Input<string>;
  image: pulumi.Input<string>;
  /** Rank 0 first: it pulls when no node has the image. */
  nodes: pulumi.Input<ImageNode[]>;
  connection: pulumi.Input<ConnectionSettings>;
}

export class ImageSync extends ShimResource {
  /** The image ID every node holds. */
  declare readonly imageId: pulumi.Output<string>;

  constructor(name: string, args: ImageSyncInputs, opts?: pulumi.CustomResourceOptions) {
    super(
      "ImageSync",
      name,
      { ...args, imageId: undefined, ids: undefined, source: undefined },
      { ...opts, additionalSecretOutputs: ["connection"] },
    );
  }
}
