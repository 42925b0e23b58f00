/**
 * The dynamic provider host that serves every sm121 resource, registered when the program loads
 * this module: index.ts imports it before sm121's own modules, so that the engine starts the host
 * (a second or more of Node.js and the SDK) while the program loads, reads the site and looks at
 * the nodes, instead of after the first resource registers. Its package's default provider in
 * older states is taken over without a replace (the host has no configuration to differ).
 */
import { ProviderResource } from "@pulumi/pulumi/resource";

class DynamicProviderHost extends ProviderResource {
  constructor() {
    super("pulumi-nodejs", "sm121", {});
  }
}

export const dynamicHost = new DynamicProviderHost();
