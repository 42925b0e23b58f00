/** `sm121 validate`: every recipe, profile and the site, every error at once. */
import { SpecError, SpecErrors } from "../recipe/errors";
import { contextProject, type CliContext } from "./context";

export function validateCommand(ctx: CliContext): number {
  try {
    const p = contextProject(ctx);
    for (const r of p.recipes.values()) for (const w of r.warnings) ctx.err(`warning: ${w}`);
    for (const b of p.bundles) for (const w of b.warnings) ctx.err(`warning: ${b.deployment}: ${w}`);
    ctx.out(`ok: ${p.recipes.size} recipes, ${Object.keys(p.site.nodes).length} nodes, ${p.bundles.length} deployments (${p.bundles.map((b) => b.deployment).join(", ")})`);
    return 0;
  } catch (e) {
    if (e instanceof SpecErrors) {
      for (const x of e.errors) ctx.err(x.message);
      ctx.err(`${e.errors.length} errors`);
      return 1;
    }
    if (e instanceof SpecError) {
      ctx.err(e.message);
      ctx.err("1 error");
      return 1;
    }
    throw e;
  }
}
