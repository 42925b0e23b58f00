/**
 * planSite: the plan of a run, as a value. From the project (the site, the recipes, their renders),
 * what the plan-time look saw on the nodes and the run's inputs, it decides everything a preview
 * shows and an up carries out: the refusals that come before any node is touched, the memory fit,
 * the replica sets' roll and surges, the order the deployments register in, and the lines the plan
 * says. Pure: no node, no Pulumi, no environment (src/program.ts gathers those); the components
 * register what it returns (src/components).
 */
import type { Project } from "../project";
import { replicaPlaces, replicaSets } from "../render/replicas";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import { lifePlanLines } from "../serve/lifeplan";
import { listMsg, msg, say, t } from "../text/messages";
import { gatewayPlace, gatewayPlan, scrapePlan } from "./files";
import { memoryFit } from "./fit";
import type { RunInputs } from "./inputs";
import { serveOrder } from "./order";
import { enginesRefuse, imagesDiffer, leavingProtected, takeovers } from "./refusals";
import { scopeOf } from "./scope";
import { rollLines, surgePlans } from "./surge";
import { rollStepOf } from "../gateway/roll.render";
import { dgppOf, imageSyncOf, modelSyncOf } from "./sync";
import type { DeploymentPlan, PlanLine, Planned, RunWiring, SiteLook } from "./types";

const info = (text: string): PlanLine => ({ level: "info", text });
const warn = (text: string): PlanLine => ({ level: "warn", text });

export function planSite(project: Project, look: SiteLook, run: RunInputs): Planned {
  const { site, recipes } = project;
  const scope = scopeOf(project, run.down, look.fabric);
  const { bundles, spares } = scope;
  const seen = look.nodes;
  const spareNames = new Set(spares.map((b) => b.deployment));
  const lines: PlanLine[] = [];
  const refuse = (refused: string): Planned => ({ refused, lines });
  const images = imagesDiffer(scope, seen);
  if (images !== undefined) return refuse(images);
  for (const u of seen.unreachable) lines.push(warn(t("serve.unreachableUnused", { what: say(u) })));
  const taken = takeovers(bundles, seen, run);
  if (taken.length > 0) return refuse(taken.join("\n"));
  const leaving = leavingProtected(seen, run);
  if (leaving.length > 0) return refuse(leaving.join("\n"));
  for (const l of seen.leaving) lines.push(info(t("serve.leaving", { node: l.node, deployment: l.deployment })));
  // A node moving to a new deployment has no restart line to say it in: the plan says it here.
  for (const m of seen.moving) lines.push(info(say(m)));
  // What happened between runs (a reboot, the memory tripwire, the keeper), and the passive checks.
  for (const l of lifePlanLines(bundles, seen.life)) lines.push(warn(l));
  for (const m of seen.passive) lines.push(info(say(m)));
  const preflight = site.preflight && run.dryRun;
  const engines = enginesRefuse(seen, spareNames, preflight);
  if (engines.length > 0) return refuse([t("serve.enginesRefuse"), ...engines.map((r) => `  ${r}`)].join("\n"));
  // What the look found running as declared gets a line, not its tables and its set's roll
  // (SM121_RESTART=1 restarts every deployment).
  const steady = new Set(run.allow.restart ? [] : seen.steady);
  const fit = memoryFit(bundles, recipes, seen, steady, run.unfit);
  lines.push(...fit.lines);
  if (fit.refused !== undefined) return refuse(fit.refused);

  // Replicas of one model roll one at a time: each engine depends on the one before it in its set,
  // so that Pulumi itself updates them in turn, and a failed one stops the roll there.
  const sets = replicaSets(site, bundles, run.rollAll);
  const surges = surgePlans(site, sets, bundles, spares, recipes, seen, steady);
  for (const p of surges) if (p.verdict.go) p.set.surge = p.bundle.deployment;
  const places = replicaPlaces(sets, bundles, site.drainS, rollStepOf(site.gateway?.format, recipes));
  const rolls = rollLines(sets, surges, steady, places);
  if (rolls.length > 0) lines.push(info(rolls.join("\n")));
  const deployments = serveOrder(bundles, seen, places).map(([b, after]): DeploymentPlan => ({
    bundle: b,
    after,
    replica: places.get(b.deployment),
    found: {
      drift: seen.drift[b.deployment] ?? [],
      health: seen.health[b.deployment] ?? [],
      unknown: seen.unknown[b.deployment],
      findings: seen.preflight[b.deployment] ?? { fatal: [], warnings: [] },
    },
    model: modelSyncOf(site, recipes.get(b.recipe), b),
    image: imageSyncOf(site, recipes.get(b.recipe), b),
    dgpp: dgppOf(site, recipes.get(b.recipe), b.nodes[0]?.stateDir ?? ""),
  }));
  const wiring: RunWiring = {
    allow: run.allow,
    preflight,
    owner: run.owner,
    keepBackups: site.keepBackups,
    liveness: { maxRestarts: site.liveness.maxRestarts, windowS: site.liveness.windowS },
    apiKey: run.secrets.apiKey,
    gateway: gatewayPlace(site),
    hookCommands: site.hooks === "pulumi-command" ? { knownHosts: site.knownHosts } : undefined,
  };
  const plan = {
    deployments,
    served: bundles.map((b) => b.deployment),
    surges,
    run: wiring,
    gateway: gatewayPlan(site, bundles, seen.lingering, look.gateway),
    scrape: scrapePlan(site, bundles, look.scrape),
    unknown: unknownWords(bundles, seen, spareNames, run),
  };
  return { plan, lines };
}

/**
 * The deployments the look could not see (a node down, a login refused), each with why and what
 * to run: nothing of theirs changes in this run, and their state keeps its last outputs (their
 * resources keep their stored inputs: components/recipe `ignoreChanges`). A spare the look could
 * not reach is the plan's reason not to surge, no failure of the run.
 */
function unknownWords(
  bundles: readonly DeploymentBundle[],
  seen: SiteObservation,
  spares: ReadonlySet<string>,
  run: RunInputs,
): string[] {
  const what = msg(run.dryRun ? "serve.unknownPlan" : "serve.unknownUp");
  return Object.entries(seen.unknown)
    .filter(([d]) => !spares.has(d))
    .map(([deployment, lines]) => {
      // A node the look reached has its holders listed, even when it holds nothing.
      const nodes = (bundles.find((b) => b.deployment === deployment)?.nodes ?? [])
        .map((n) => n.node)
        .filter((n) => seen.holders[n] === undefined)
        .join(", ");
      const file = `Pulumi.${run.stack}.yaml`;
      const fails = msg("serve.unknownFails", { deployment, what, lines: listMsg(lines, "lines") });
      return `${say(fails)}\n  ${t("serve.unknownNext", { nodes, deployment, file })}`;
    });
}
