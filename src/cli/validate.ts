/**
 * `sm121 validate [--json]`: the site, every recipe, every deployment's render, and every profile
 * in the repository, deployed or not (a profile with `FOO=$(whoami)` fails here before anyone
 * deploys it). Every error at once, each with file:line:col, the field, the problem and the fix.
 * (No source line is echoed: the line of an error may hold a secret, as `--api-key=...` does.)
 * Exit 1 on any error.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { SpecError } from "../recipe/errors";
import { loadRecipes } from "../engines/recipes";
import { readSite } from "../recipe/site";
import type { Recipe, Site } from "../recipe/types";
import { stackFile, type Project } from "../project";
import { bool, type Parsed } from "./args";
import { contextProject, type CliContext } from "./context";
import { say, t } from "../text/messages";
import { repoProfiles, specErrorsOf } from "./repo-profiles";
import { jsonOut, validateSchema, type ValidateReport } from "./schemas";

/** Runs `f`, keeping its input errors; anything else is a bug and is thrown. */
function attempt<T>(errors: SpecError[], f: () => T): T | undefined {
  try {
    return f();
  } catch (e) {
    const found = specErrorsOf(e);
    if (found === undefined) throw e;
    errors.push(...found);
    return undefined;
  }
}

/**
 * The site and the recipes for finding the profiles, also when the project as a whole failed (its
 * errors are reported already).
 */
function inputs(ctx: CliContext, project: Project | undefined): { site?: Site; recipes?: ReadonlyMap<string, Recipe> } {
  if (project !== undefined) return project;
  const ignored: SpecError[] = [];
  const site = attempt(ignored, () => readSite(stackFile(ctx.root, ctx.stack), ctx.stack, `Pulumi.${ctx.stack}.yaml`));
  const dir = site?.recipesDir ?? "recipes";
  const recipes = existsSync(join(ctx.root, dir))
    ? attempt(ignored, () => loadRecipes(join(ctx.root, dir), dir))
    : undefined;
  return { ...(site !== undefined && { site }), ...(recipes !== undefined && { recipes }) };
}

export function validateReport(ctx: CliContext): ValidateReport {
  const errors: SpecError[] = [];
  const warnings: string[] = [];
  const project = attempt(errors, () => contextProject(ctx));
  const { site, recipes } = inputs(ctx, project);
  let profiles = 0;
  if (site !== undefined && recipes !== undefined) {
    for (const rp of repoProfiles(ctx.root, site, recipes)) {
      for (const pf of rp.profiles) {
        profiles++;
        errors.push(...pf.errors);
      }
    }
  }
  for (const r of project?.recipes.values() ?? []) warnings.push(...r.warnings.map((w) => say(w)));
  for (const b of project?.bundles ?? []) warnings.push(...b.warnings.map((w) => `${b.deployment}: ${w}`));
  // A deployed profile's errors come both from its render and from the repository's list.
  const unique = [...new Map(errors.map((e) => [e.message, e])).values()];
  return {
    stack: ctx.stack,
    ok: unique.length === 0,
    recipes: recipes?.size ?? 0,
    profiles,
    nodes: Object.keys(site?.nodes ?? {}).length,
    deployments: project?.bundles.map((b) => b.deployment) ?? [],
    errors: unique.map((e) => ({
      file: e.file,
      line: e.line,
      col: e.col,
      field: e.field,
      problem: say(e.problem),
      fix: say(e.fix),
      message: e.message,
    })),
    warnings,
  };
}

export function validateCommand(ctx: CliContext, p: Parsed): number {
  const r = validateReport(ctx);
  if (bool(p, "json")) {
    ctx.out(jsonOut(validateSchema(), r));
    return r.ok ? 0 : 1;
  }
  for (const w of r.warnings) ctx.err(`${t("validate.warning")}: ${w}`);
  if (!r.ok) {
    for (const e of r.errors) ctx.err(e.message);
    ctx.err(t("validate.errors", { count: r.errors.length }));
    return 1;
  }
  const counts = [
    t("count.recipes", { count: r.recipes }),
    t("count.profiles", { count: r.profiles }),
    t("count.nodes", { count: r.nodes }),
    t("count.deployments", { count: r.deployments.length }),
  ];
  ctx.out(t("validate.ok", { counts: counts.join(", "), deployments: r.deployments.join(", ") || "-" }));
  return 0;
}
