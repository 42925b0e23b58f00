/**
 * The Site component (`sm121:index:Site`): the parent of every resource the program registers,
 * one per stack, named after the stack. Earlier releases registered the Deployment components, the
 * gateway file and the scrape targets under the stack itself: `fromStack` gives each child the
 * aliases of that place (its children inherit them), so one up of an older stack moves them here
 * and changes nothing on any node.
 */
import type * as pulumi from "@pulumi/pulumi";
import { ComponentResource, rootStackResource } from "@pulumi/pulumi/resource";
import { SITE_TYPE } from "./tokens";

export class Site extends ComponentResource {
  constructor(name: string, opts?: pulumi.ComponentResourceOptions) {
    super(SITE_TYPE, name, {}, opts);
  }

  /**
   * A child's options: this component as its parent, and its names before it had one (under the
   * stack, with each type it had there).
   */
  childOptions<T extends pulumi.ComponentResourceOptions | pulumi.CustomResourceOptions>(
    opts: T,
    typesBefore: readonly string[] = [],
  ): T {
    const aliases: Array<pulumi.Input<string | pulumi.Alias>> = [
      ...(opts.aliases ?? []),
      { parent: rootStackResource },
      ...typesBefore.map((type) => ({ type, parent: rootStackResource })),
    ];
    return { ...opts, parent: this, aliases };
  }
}
