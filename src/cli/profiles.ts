/**
 * `sm121 profiles [recipe] [--json]`: seed 001's `profiles`. Per script recipe, every profile in
 * the repository (name, status, runnable, description, the deployments that use it), then the
 * nodes (host, protected, the node recipes they have, their deployments). A profile that does not
 * parse is listed as invalid with its first error, and the exit code is 1.
 */

import { nodeConn } from "../render/node";
import type { Parsed } from "./args";
import { UsageError, bool } from "./args";
import { contextProject, type CliContext } from "./context";
import { t } from "../text/messages";
import { repoProfiles } from "./repo-profiles";
import { jsonOut, profilesSchema, type ProfilesReport } from "./schemas";
import { table } from "./table";

export function profilesReport(ctx: CliContext, only?: string): ProfilesReport {
  const project = contextProject(ctx);
  const { site } = project;
  const scriptRecipes = [...project.recipes.values()].filter((r) => r.deploy === "script").map((r) => r.name);
  if (only !== undefined && !scriptRecipes.includes(only)) {
    throw new UsageError(t("profiles.unknownRecipe", { recipe: only, recipes: scriptRecipes.join(", ") || "-" }));
  }
  const usedBy = (recipe: string, profile: string) =>
    project.bundles.filter((b) => b.recipe === recipe && b.profile === profile).map((b) => b.deployment);
  return {
    stack: ctx.stack,
    recipes: repoProfiles(ctx.root, site, project.recipes, only).map((rp) => ({
      recipe: rp.recipe,
      dir: rp.dir,
      profiles: rp.profiles.map((pf) => {
        const d = pf.profile?.directives;
        return {
          name: pf.name,
          file: pf.file,
          status: d?.status ?? "invalid",
          runnable: d?.runnable ?? null,
          description: d === undefined || d.description === "" ? null : d.description,
          nodeRecipe: d?.recipe ?? null,
          deployments: usedBy(rp.recipe, pf.name),
          error: pf.errors[0]?.message ?? null,
        };
      }),
    })),
    nodes: Object.values(site.nodes).map((n) => {
      const c = nodeConn(n);
      return {
        node: n.name,
        host: c.kind === "local" ? "local" : `${c.user}@${c.host}:${c.port}`,
        protected: n.protected,
        recipes: Object.keys(n.recipes),
        deployments: project.bundles.filter((b) => b.nodes.some((x) => x.node === n.name)).map((b) => b.deployment),
      };
    }),
  };
}

const yesNo = (v: boolean | null) => (v === null ? "-" : v ? t("profiles.yes") : t("profiles.no"));

export function profilesText(r: ProfilesReport): string[] {
  const out: string[] = [];
  for (const rp of r.recipes) {
    out.push(t("profiles.recipe", { recipe: rp.recipe, dir: rp.dir }));
    if (rp.profiles.length === 0) out.push(`  ${t("profiles.none")}`);
    else {
      const rows = rp.profiles.map((p) => [
        p.name,
        p.status === "invalid" ? t("profiles.invalid") : p.status,
        yesNo(p.runnable),
        p.deployments.join(", ") || "-",
        p.description ?? "-",
      ]);
      out.push(
        ...table(
          [
            t("profiles.colProfile"),
            t("profiles.colStatus"),
            t("profiles.colRunnable"),
            t("profiles.colDeployments"),
            t("profiles.colDescription"),
          ],
          rows,
        ),
      );
      for (const p of rp.profiles) if (p.error !== null) out.push(`  ${p.name}: ${t("common.error")}: ${p.error}`);
    }
    out.push("");
  }
  out.push(t("profiles.nodes"));
  const rows = r.nodes.map((n) => [
    n.node + (n.protected ? ` ${t("status.protectedMark")}` : ""),
    n.host,
    n.recipes.join(", ") || "-",
    n.deployments.join(", ") || "-",
  ]);
  out.push(
    ...table(
      [t("status.colNode"), t("profiles.colHost"), t("profiles.colNodeRecipes"), t("profiles.colDeployments")],
      rows,
    ),
  );
  return out;
}

export function profilesCommand(ctx: CliContext, p: Parsed): number {
  const r = profilesReport(ctx, p.positional[0]);
  if (bool(p, "json")) ctx.out(jsonOut(profilesSchema(), r));
  else for (const l of profilesText(r)) ctx.out(l);
  return r.recipes.every((rp) => rp.profiles.every((x) => x.error === null)) ? 0 : 1;
}
