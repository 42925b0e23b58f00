/**
 * The program's plan-time look at the site (read-only), over one connection per node: the fabric
 * (`auto` resolved, first where a node's fabric has an `auto` part, else beside the rest), the
 * deployments on each node and the files sm121 keeps there. What it saw is planSite's input
 * (src/plan); the fabric's refusals come from here, before the node look where `auto` is resolved.
 */
import type { Project } from "./project";
import type { Dialer } from "./remote";
import { observeSite } from "./serve/observe";
import { imageQuestions, lookFabric, resolvesAuto } from "./fabric/resolve.serve";
import { fabricDeploymentsOf } from "./fabric/step.serve";
import { lookPlaced } from "./serve/sitefile";
import { t } from "./text/messages";
import type { RunInputs } from "./plan/inputs";
import { gatewayPlace, scrapePlace } from "./plan/files";
import { scopeOf } from "./plan/scope";
import type { SiteLook } from "./plan/types";

/** The look of this run; `refuse`: the error the program throws (Pulumi's RunError prints without a stack). */
export async function lookSite(
  project: Project,
  run: RunInputs,
  dial: Dialer,
  refuse: (message: string) => Error,
): Promise<SiteLook> {
  const { site } = project;
  const first = scopeOf(project, run.down);
  const every = [...first.bundles, ...first.spares];
  // The image IDs the fabric compares between nodes come with each node's look (its one docker call).
  const fabric = lookFabric(first.withSpares, fabricDeploymentsOf(every), dial, { images: false }).then((look) => {
    if (look.refusals.length > 0) throw refuse([t("fabric.refuses"), ...look.refusals.map((r) => `  ${r}`)].join("\n"));
    return look.resolved;
  });
  // Only an `auto` fabric renders deployments again; any other fabric look runs beside the rest.
  const resolved = resolvesAuto(first.withSpares) ? await fabric : {};
  const scope = scopeOf(project, run.down, resolved);
  const looked = [...scope.bundles, ...scope.spares];
  const gateway = gatewayPlace(site);
  const scrape = scrapePlace(site);
  const [nodes, scrapeFound, gatewayFound] = await Promise.all([
    observeSite(site.nodes, looked, dial, {
      checks: site.preflight && run.dryRun,
      livenessS: site.liveness.timeoutS,
      placeOf: (node) => {
        const at = site.locate(["nodes", node, "ssh"]);
        return `${at.line > 0 ? `${at.file}:${at.line}:${at.col}` : at.file}: sm121:nodes.${node}.ssh`;
      },
      me: run.owner,
      allowProtected: run.allow.protected,
      images: imageQuestions(scope.withSpares, fabricDeploymentsOf(looked)),
    }),
    scrape === undefined ? undefined : lookPlaced(scrape, dial),
    gateway === undefined ? undefined : lookPlaced(gateway, dial),
    fabric,
  ]);
  return { fabric: resolved, nodes, gateway: gatewayFound, scrape: scrapeFound };
}
