/**
 * The sm121 Pulumi program: read the site from this stack's config file, load the recipes, render
 * every deployment at plan time, and create one Recipe component per deployment.
 */
import * as pulumi from "@pulumi/pulumi";
import { Recipe } from "./components/recipe";
import { loadProject } from "./project";

const stack = pulumi.getStack();
const { site, bundles } = loadProject(process.cwd(), stack);
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

const recipes = bundles.map((bundle) => new Recipe(bundle.deployment, { bundle, connection, secrets: pulumi.secret(secrets), allow }));

export const deployments = Object.fromEntries(
  recipes.map((r, i) => [bundles[i]?.deployment ?? String(i), { endpoints: r.endpoints, servedModel: r.servedModel, status: r.status }]),
);
