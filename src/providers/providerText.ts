/**
 * The provider text that Pulumi stores in the state for each sm121 resource kind (see ./shim for
 * why it is written by hand). This module imports nothing of Pulumi: the provider process (which
 * runs the implementations) uses providerMoved without loading the SDK.
 *
 * The text names two things of the project, no more: the module that holds the kind's provider
 * object, as a path inside the project (PROVIDER_MODULES), and that the object is its `provider`.
 * Each implementation module declares that object as a real object that `satisfies` the SDK's
 * `dynamic.ResourceProvider`, so a missing or misnamed method fails to compile; the text maps no
 * method. It finds the project from the directory the provider host runs in, which Pulumi sets to
 * the program's directory: the checkout (where Pulumi.yaml is), or, in an operator's project that
 * `sm121 init` made, the installed package that its Pulumi.yaml's `main` names.
 */
import type { StateKind } from "./stateVersion";

/** The dynamic provider host's property for the provider text (cmd/dynamic-provider). */
export const PROVIDER_KEY = "__provider";

/**
 * Where each kind's `provider` object is: a module of the compiled project (dist/src/...). A stored
 * text names its module, so a module named here keeps its place, or leaves a module at the old one
 * for the states of the support window (./stateVersion WINDOW), which delete and read run.
 */
export const PROVIDER_MODULES = {
  EngineDeployment: "providers/engineImpl",
  DgppProvision: "dgpp/impl.providers",
  GatewayFragment: "providers/gatewayImpl",
  ModelCache: "providers/modelCacheImpl",
  ImageSync: "providers/imageSyncImpl",
  ScrapeTargets: "providers/scrapeTargetsImpl",
  Surge: "providers/surgeImpl",
  HostCommand: "providers/hostCommandImpl",
} as const satisfies Record<StateKind, string>;

/** A kind's module as the text names it: a path inside the project. */
export const providerPath = (kind: StateKind): string => `dist/src/${PROVIDER_MODULES[kind]}.js`;

/**
 * The provider module text of a kind. It runs in the provider process with Node's own modules
 * only; the host calls `handler()` when it first serves the kind, and the implementation loads
 * then. The compile cache (NODE_COMPILE_CACHE, else Node's default directory) makes its modules
 * load from cached code after the first run.
 */
export function providerText(kind: StateKind): string {
  const rel = providerPath(kind);
  return `"use strict";
// sm121's dynamic provider of ${kind}: the \`provider\` of ${rel} of the project Pulumi runs in.
const rel = ${JSON.stringify(rel)};
exports.handler = () => {
  const path = require("path");
  const fs = require("fs");
  let dir = process.cwd();
  while (!fs.existsSync(path.join(dir, rel)) && path.dirname(dir) !== dir) dir = path.dirname(dir);
  const file = path.join(dir, rel);
  if (!fs.existsSync(file)) {
    throw new Error("sm121: " + rel + " is not found from " + process.cwd() + " (the program's directory); " +
      "run pulumi in an sm121 project: a checkout after \`npm run build\`, or the project sm121 init made " +
      "for the installed package");
  }
  const mod = require("module");
  if (typeof mod.enableCompileCache === "function") mod.enableCompileCache();
  return require(file).provider;
};
`;
}

/**
 * Whether a stored provider text differs from this build's: a stack written by an earlier release
 * (another module, or the text of a release that mapped each method) is updated once, touching no
 * node, so that its delete and read run this release's provider object afterwards.
 */
export function providerMoved(olds: { __provider?: unknown }, news: { __provider?: unknown }): boolean {
  return (
    typeof olds.__provider === "string" && typeof news.__provider === "string" && olds.__provider !== news.__provider
  );
}
