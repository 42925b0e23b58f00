/**
 * The provider object that Pulumi serializes into the state for each resource kind. It stays a
 * thin shim: it captures only where its implementation module lies *inside the project*
 * (`dist/src/providers/engineImpl.js`) and loads it at run time from the directory the provider
 * host runs in, which Pulumi sets to the project directory (where Pulumi.yaml is). So the state
 * names no path of the machine that wrote it: a CI runner or a re-clone at another path runs
 * destroy and refresh with its own checkout, and always with the current code.
 */
import type * as pulumi from "@pulumi/pulumi";
import type * as NodeFs from "node:fs";
import * as NodePath from "node:path";

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

function shim(rel: string): P {
  // Runs in the provider process from its serialized text: only `rel` and Node's own modules.
  const impl = (): ProviderImpl => {
    const nodePath = require("path") as typeof NodePath;
    const nodeFs = require("fs") as typeof NodeFs;
    let dir = process.cwd();
    while (!nodeFs.existsSync(nodePath.join(dir, rel)) && nodePath.dirname(dir) !== dir) dir = nodePath.dirname(dir);
    const file = nodePath.join(dir, rel);
    if (!nodeFs.existsSync(file)) {
      throw new Error(`sm121: ${rel} is not found from ${process.cwd()}; run pulumi in the sm121 project directory (where Pulumi.yaml is) after \`npm run build\``);
    }
    return require(file) as ProviderImpl;
  };
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

/** The project directory of this build: this file is `<project>/dist/src/providers/shim.js`. */
const PROJECT = NodePath.resolve(__dirname, "..", "..", "..");

/**
 * One provider object per implementation module (a name beside this file, e.g. "engineImpl"):
 * Pulumi serializes it once and caches it.
 */
export function providerFor(module: string): P {
  const rel = NodePath.relative(PROJECT, NodePath.join(__dirname, `${module}.js`));
  const hit = cache.get(rel);
  if (hit !== undefined) return hit;
  const p = shim(rel);
  cache.set(rel, p);
  return p;
}

/**
 * Whether a stored provider text differs from this build's: a stack written before the provider
 * text was portable (it named an absolute path) is updated once, touching no node, so that its
 * delete and read work from any checkout afterwards.
 */
export function providerMoved(olds: { __provider?: unknown }, news: { __provider?: unknown }): boolean {
  return typeof olds.__provider === "string" && typeof news.__provider === "string" && olds.__provider !== news.__provider;
}
