/** The project as the program and the CLI see it: the stack's site, the recipes, the renders. */
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { collectErrors, type SpecError, throwIfAny } from "./recipe/errors";
import { msg, SaidError } from "./text/messages";
import { loadRecipes } from "./engines/recipes";
import { siteFrom } from "./recipe/site";
import { loginHome, sshTarget, type LoginHome } from "./remote/login";
import { pulumiConfigSource, stackFileSource, type ConfigDoc, type SiteSource } from "./recipe/siteSource";
import type { Recipe, Site } from "./recipe/types";
import { siteError } from "./render/checks";
import { renderSite } from "./render/deployment";
import type { DeploymentBundle } from "./render/types";

export interface Project {
  root: string;
  site: Site;
  recipes: Map<string, Recipe>;
  bundles: DeploymentBundle[];
}

export function stackFile(root: string, stack: string): string {
  return join(root, `Pulumi.${stack}.yaml`);
}

/**
 * `config`: the stack's configuration as Pulumi resolved it (`sm121:<key>` to the text Pulumi hands
 * a program), which includes project defaults, ESC environments and --config-file. Without it (the
 * CLI with no Pulumi CLI), the stack file is read alone.
 */
export function loadProject(
  root: string,
  stack: string,
  config?: Readonly<Record<string, string>>,
  home: LoginHome = loginHome(),
): Project {
  const file = stackFile(root, stack);
  const display = `Pulumi.${stack}.yaml`;
  const doc = (path: string, name: string): ConfigDoc | undefined =>
    existsSync(path) ? { file: name, text: readFileSync(path, "utf8") } : undefined;
  let source: () => SiteSource;
  if (config === undefined) {
    const text = doc(file, display);
    if (text === undefined) throw new SaidError(msg("project.noStack", { file }));
    source = () => stackFileSource(text);
  } else {
    source = () =>
      pulumiConfigSource(config, display, {
        stack: doc(file, display),
        project: doc(join(root, "Pulumi.yaml"), "Pulumi.yaml"),
      });
  }
  // The site and the recipes are independent inputs: report the errors of both at once.
  const errors: SpecError[] = [];
  const attempt = <T>(f: () => T): T | undefined => collectErrors(errors, f);
  // Each node's ssh block as ssh(1) reads it: ~/.ssh/config's HostName, User and Port (remote/login).
  const site = attempt(() => siteFrom(source(), stack, (w) => sshTarget(w, home)));
  const dir = site?.recipesDir ?? "recipes";
  const recipes = attempt(() => {
    if (!isDirectory(join(root, dir))) {
      // Without a valid site, which directory was meant is unknown: its own errors are reported.
      if (site === undefined) return undefined;
      throw siteError(
        site,
        ["recipesDir"],
        msg("spec.project.noRecipes", { dir, root }),
        msg("spec.project.noRecipesFix", { dir }),
      );
    }
    return loadRecipes(join(root, dir), dir);
  });
  throwIfAny(errors);
  if (site === undefined || recipes === undefined) throw new Error("unreachable: no site or recipes without an error");
  const bundles = renderSite(site, recipes, { root });
  return { root, site, recipes, bundles };
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/**
 * The project's own `backend.url` (Pulumi.yaml: what `sm121 init` writes in a directory it makes),
 * which the Pulumi CLI takes when $PULUMI_BACKEND_URL is not set; undefined without one.
 */
export function projectBackend(root: string): string | undefined {
  try {
    const doc: unknown = parse(readFileSync(join(root, "Pulumi.yaml"), "utf8"));
    const url = (doc as { backend?: { url?: unknown } } | null)?.backend?.url;
    return typeof url === "string" && url !== "" ? url : undefined;
  } catch {
    return undefined;
  }
}
