/**
 * The provider text that Pulumi stores in the state for each sm121 resource kind (see ./shim for
 * why it is written by hand). This module imports nothing of Pulumi: the provider process (which
 * runs the implementations) uses providerMoved without loading the SDK.
 */

/** The dynamic provider host's property for the provider text (cmd/dynamic-provider). */
export const PROVIDER_KEY = "__provider";

/**
 * The provider module text for an implementation at `rel` (relative to the project). It runs in
 * the provider process with Node's own modules only. The compile cache (NODE_COMPILE_CACHE, else
 * Node's default directory) makes the implementation's modules load from cached code after the
 * first run.
 */
export function providerText(rel: string): string {
  return `"use strict";
// sm121's dynamic provider: the implementation is ${rel} of the project Pulumi runs in.
const rel = ${JSON.stringify(rel)};
let loaded;
function impl() {
  if (loaded !== undefined) return loaded;
  const path = require("path");
  const fs = require("fs");
  let dir = process.cwd();
  while (!fs.existsSync(path.join(dir, rel)) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const file = path.join(dir, rel);
  if (!fs.existsSync(file)) {
    throw new Error("sm121: " + rel + " is not found from " + process.cwd() +
      "; run pulumi in the sm121 project directory (where Pulumi.yaml is) after \`npm run build\`");
  }
  const mod = require("module");
  if (typeof mod.enableCompileCache === "function") mod.enableCompileCache();
  loaded = require(file);
  return loaded;
}
exports.handler = () => ({
  check: (olds, news) => (impl().check ? impl().check(olds, news) : Promise.resolve({ inputs: news })),
  diff: (id, olds, news) => impl().diff(id, olds, news),
  create: (inputs) => impl().create(inputs),
  update: (id, olds, news) => impl().update(id, olds, news),
  delete: (id, props) => impl().remove(id, props),
  read: (id, props) => (impl().read ? impl().read(id, props) : Promise.resolve({ id, props })),
});
`;
}

/**
 * Whether a stored provider text differs from this build's: a stack written by an earlier release
 * (an absolute path, or the closure serializer's text) is updated once, touching no node, so that
 * its delete and read run this release's implementation from any checkout afterwards.
 */
export function providerMoved(olds: { __provider?: unknown }, news: { __provider?: unknown }): boolean {
  return (
    typeof olds.__provider === "string" && typeof news.__provider === "string" && olds.__provider !== news.__provider
  );
}
