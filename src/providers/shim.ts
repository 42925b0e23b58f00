/**
 * The provider text that Pulumi stores in the state for each resource kind, and the resource class
 * that carries it. The text is written by hand (./providerText), not produced by Pulumi's closure
 * serializer: a small CommonJS module that names the module of its kind's provider object by its
 * path *inside the project* (`dist/src/providers/engineImpl.js`) and loads it at run time from the
 * directory the provider host runs in, which Pulumi sets to the program's directory (the checkout,
 * or the installed package an operator's project runs). So the state names no path of the machine
 * that wrote it: a CI runner or a re-clone at another path runs destroy and refresh with its own
 * checkout, and always with the current code.
 *
 * Writing the text by hand spares every run the closure serializer (it loads TypeScript and the
 * whole SDK: about half a second before the first resource registers). What this depends on is
 * the dynamic provider host's contract in @pulumi/pulumi (cmd/dynamic-provider): the resource type
 * `pulumi-nodejs:dynamic/<module>:<type>`, the `__provider` input, and a module text whose
 * `handler()` returns the provider object. test/providers-shim.test.ts runs the SDK's own host
 * code on this text and fails if that contract changes.
 */
import { output, secret, type Inputs, type Output } from "@pulumi/pulumi/output";
import { CustomResource, type CustomResourceOptions } from "@pulumi/pulumi/resource";
import { holdsSecrets } from "../render/plan";
import type { DeploymentBundle } from "../render/types";
import { pack } from "./packed";
import { PROVIDER_KEY, providerText } from "./providerText";
import { STATE_VERSIONS, type StateKind } from "./stateVersion";

/**
 * A resource served by the dynamic provider host (`pulumi-nodejs:dynamic/sm121:<type>`), as
 * `pulumi.dynamic.Resource` registers it, with the provider text of its kind (./providerText).
 * Its inputs, and so the outputs its provider writes from them, carry the kind's `stateVersion`
 * (./stateVersion).
 */
export class ShimResource extends CustomResource {
  constructor(type: StateKind, name: string, props: Inputs, opts?: CustomResourceOptions) {
    for (const key of [PROVIDER_KEY, "stateVersion"]) {
      if (props[key] !== undefined) throw new Error(`${type} ${name}: ${key} is reserved for sm121's own use`);
    }
    const own = { [PROVIDER_KEY]: providerText(type), stateVersion: STATE_VERSIONS[type] };
    super(`pulumi-nodejs:dynamic/sm121:${type}`, name, { ...props, ...own }, opts);
  }
}

/**
 * A bundle packed for its `__bundle` property (./packed): a Pulumi secret when it carries a value
 * that is or looks secret (a profile's or a recipe's token), so that the state never holds it plain.
 */
export function packedBundle(b: DeploymentBundle): Output<string> {
  return holdsSecrets(b) ? secret(pack(b)) : output(pack(b));
}
