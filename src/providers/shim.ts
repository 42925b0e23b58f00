/**
 * The provider object that Pulumi serializes into the state for each resource kind. It stays a
 * thin shim: it captures only the path of its implementation module and loads it at run time, so
 * no library object is serialized and delete/read always run the current code.
 */
import type * as pulumi from "@pulumi/pulumi";

type P = pulumi.dynamic.ResourceProvider;

/** What an implementation module exports; check and read are optional. */
export interface ProviderImpl {
  check?: NonNullable<P["check"]>;
  diff: NonNullable<P["diff"]>;
  create: P["create"];
  update: NonNullable<P["update"]>;
  remove: NonNullable<P["delete"]>;
  read?: NonNullable<P["read"]>;
}

function shim(implPath: string): P {
  const impl = (): ProviderImpl => require(implPath) as ProviderImpl;
  return {
    check: (olds, news) => impl().check?.(olds, news) ?? Promise.resolve({ inputs: news }),
    diff: (id, olds, news) => impl().diff(id, olds, news),
    create: (inputs) => impl().create(inputs),
    update: (id, olds, news) => impl().update(id, olds, news),
    delete: (id, props) => impl().remove(id, props),
    read: (id, props) => impl().read?.(id, props) ?? Promise.resolve({ id, props }),
  };
}

const cache = new Map<string, P>();

/** One provider object per implementation: Pulumi serializes it once and caches it. */
export function providerFor(implPath: string): P {
  const hit = cache.get(implPath);
  if (hit !== undefined) return hit;
  const p = shim(implPath);
  cache.set(implPath, p);
  return p;
}
