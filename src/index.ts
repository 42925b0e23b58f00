/**
 * The sm121 Pulumi program: read the site from this stack's config file, load the recipes, render
 * every deployment at plan time, and create one Recipe component per deployment.
 */
import * as pulumi from "@pulumi/pulumi";
import { Recipe } from "./components/recipe";
import { loadProject } from "./project";
import { SpecError, SpecErrors } from "./recipe/errors";
import { dgppBuildScript, dgppPaths } from "./render/dgpp";

const stack = pulumi.getStack();
// The project directory (where Pulumi.yaml is), as the language host passes it; the working
// directory is the program's, which may be a compiled output directory.
const root = process.env["PULUMI_NODEJS_ROOT_DIRECTORY"] ?? process.cwd();
function load() {
  try {
    return loadProject(root, stack);
  } catch (e) {
    // Input errors print as themselves (file:line:col: field: problem; fix), without a stack trace.
    if (e instanceof SpecError || e instanceof SpecErrors) throw new pulumi.RunError(e.message);
    throw e;
  }
}
const { site, bundles, recipes: recipeDefs } = load();
const config = new pulumi.Config("sm121");

const list = (v: string | undefined) => (v ?? "").split(",").map((s) => s.trim()).filter((s) => s !== "");
const allow = {
  protected: list(process.env["SM121_ALLOW_PROTECTED"]),
  experimental: process.env["SM121_EXPERIMENTAL"] === "1",
  restart: process.env["SM121_RESTART"] === "1",
};
const privateKey = config.getSecret("sshPrivateKey");
const passphrase = config.getSecret("sshPassphrase");
const connection = pulumi.all([privateKey, passphrase]).apply(([key, pass]) => ({
  knownHosts: site.knownHosts,
  hostKeys: site.hostKeys,
  ...(key !== undefined && { privateKey: key }),
  ...(pass !== undefined && { passphrase: pass }),
}));
const secrets: Record<string, pulumi.Output<string>> = {};
const hf = config.getSecret("hfToken");
const apiKey = config.getSecret("apiKey");
if (hf !== undefined) secrets["HF_TOKEN"] = hf;
if (apiKey !== undefined) secrets["API_KEY"] = apiKey;

/** `sm121:preflight: true`: a preview also runs the read-only node checks (seed 001's --dry-run --preflight). */
const preflight = site.preflight && pulumi.runtime.isDryRun();

/** DGPP recipes get their provisioning: the pin (when set) and where DGPP lives on the nodes. */
function dgppOf(recipeName: string) {
  const r = recipeDefs.get(recipeName);
  if (r?.engine !== "dgpp" || r.dgpp === undefined) return undefined;
  const pinned = r.dgpp.repo !== undefined && r.dgpp.rev !== undefined;
  return { paths: dgppPaths(r), pollS: site.dgppPollS, capS: 90 * 60, ...(pinned && { rev: r.dgpp.rev, buildScript: dgppBuildScript(r) }) };
}

const recipes = bundles.map((bundle) => {
  const dgpp = dgppOf(bundle.recipe);
  return new Recipe(bundle.deployment, { bundle, connection, secrets: pulumi.secret(secrets), allow, preflight, ...(dgpp !== undefined && { dgpp }) });
});

export const deployments = Object.fromEntries(
  recipes.map((r, i) => [bundles[i]?.deployment ?? String(i), { endpoints: r.endpoints, servedModel: r.servedModel, status: r.status }]),
);
