/**
 * What a deployment's ModelCache, ImageSync and DgppProvision carry, decided at plan time from the
 * site, the recipe and the rendered bundle (pure).
 */
import type { Recipe as RecipeDef, Site } from "../recipe/types";
import type { DeploymentBundle } from "../render/types";
import { recipeRevision } from "../engines/options/recipe";
import { dgppBuildScript, dgppPaths } from "../dgpp/files.render";
import type { DgppPlan, ImageSyncPlan, ModelSync } from "./types";

/** A Hugging Face repo id (org/name); a path or a bare name is not fetched from the hub. */
const REPO_ID = /^[A-Za-z0-9][\w.-]*\/[\w.-]+$/;

export function modelSyncOf(site: Site, recipe: RecipeDef | undefined, b: DeploymentBundle): ModelSync | undefined {
  if (site.modelCache === "off") return undefined;
  // Script recipes name the model in the profile (MODEL).
  const repo = recipe?.model ?? b.nodes[0]?.envKeys?.["MODEL"];
  if (repo === undefined || !REPO_ID.test(repo) || repo.includes("--") || repo.includes("..")) return undefined;
  return {
    repo,
    revision: (recipe === undefined ? undefined : recipeRevision(recipe)) ?? "main",
    nodes: b.nodes.map((n) => ({
      node: n.node,
      conn: n.conn,
      ip: n.ip,
      stateDir: n.stateDir,
      hfHome: site.nodes[n.node]?.env.HF_HOME ?? "~/.cache/huggingface",
    })),
    protectedNodes: b.nodes.filter((n) => n.protected).map((n) => n.node),
    onDelete: site.modelCache,
  };
}

export function imageSyncOf(site: Site, recipe: RecipeDef | undefined, b: DeploymentBundle): ImageSyncPlan | undefined {
  if (!site.imageSync || b.deploy !== "docker" || recipe?.image === undefined) return undefined;
  return {
    image: recipe.image,
    nodes: b.nodes.map((n) => ({ node: n.node, conn: n.conn, ip: n.ip, stateDir: n.stateDir, protected: n.protected })),
  };
}

/** DGPP recipes get their provisioning: the pin (when set) and where DGPP lives on the nodes. */
export function dgppOf(site: Site, r: RecipeDef | undefined, headDir: string): DgppPlan | undefined {
  // A [dgpp] block is refused on any other engine's recipe (the dgpp driver's recipe rules).
  if (r?.dgpp === undefined) return undefined;
  const pinned = r.dgpp.repo !== undefined && r.dgpp.rev !== undefined;
  const pin = pinned && { rev: r.dgpp.rev, buildScript: dgppBuildScript(r) };
  return { paths: dgppPaths(r, headDir), pollS: site.dgppPollS, capS: 90 * 60, ...pin };
}
