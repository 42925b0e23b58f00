import type { Output } from "@pulumi/pulumi/output";

/**
 * An output's value as a promise: for values known at plan time (the stack's config), and for
 * the URNs the engine hands back once it has answered every registration.
 */
export function known<T>(o: Output<T>): Promise<T> {
  return new Promise((resolve) => {
    o.apply((v) => {
      resolve(v);
      return v;
    });
  });
}
