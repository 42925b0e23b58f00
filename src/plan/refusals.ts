/**
 * The refusals that come before anything stops, from what the look saw: another stack's deployment
 * this run would stop, a protected node a deployment leaves, what an engine would refuse at start,
 * images that differ between a deployment's nodes.
 */
import type { DeploymentBundle } from "../render/types";
import { fabricDeploymentsOf } from "../fabric/step.serve";
import { imageRefusals } from "../fabric/resolve.serve";
import type { SiteObservation } from "../serve/observe";
import { foreignHolders, ownerDrift, takeoverRefusal } from "../serve/owner";
import { say, t } from "../text/messages";
import { leavingRefusal } from "../text/protected";
import type { RunInputs } from "./inputs";
import type { Scope } from "./scope";

/** The image IDs the fabric compares between a deployment's nodes, as each node's look found them. */
export function imagesDiffer(scope: Scope, seen: SiteObservation): string | undefined {
  const ds = fabricDeploymentsOf([...scope.bundles, ...scope.spares]);
  const differ = imageRefusals(scope.withSpares, ds, seen.images);
  return differ.length === 0 ? undefined : [t("fabric.refuses"), ...differ.map((r) => `  ${r}`)].join("\n");
}

/** Deployments of other stacks that this run would stop, where SM121_ALLOW_TAKEOVER does not allow it. */
export function takeovers(bundles: readonly DeploymentBundle[], seen: SiteObservation, run: RunInputs): string[] {
  const me = run.owner;
  return bundles.flatMap((b) =>
    b.nodes.flatMap((nb) => {
      if ((run.allow.takeover ?? []).includes(nb.node)) return [];
      const holders = seen.holders[nb.node] ?? [];
      const drift = ownerDrift(nb.node, b.deployment, holders, me);
      return foreignHolders(holders, me).map((h) =>
        [...drift.map((m) => say(m)), takeoverRefusal(nb.node, h, me)].join(": "),
      );
    }),
  );
}

/** Deployments this run would stop on a protected node they leave, without SM121_ALLOW_PROTECTED there. */
export function leavingProtected(seen: SiteObservation, run: RunInputs): string[] {
  const leaving = seen.leaving.filter((l) => l.protected && !run.allow.protected.includes(l.node));
  return leaving.map((l) => leavingRefusal(l.node, l.deployment, run.down.includes(l.deployment)));
}

/**
 * What an engine would refuse at start (a file it opens at parse time, an HF cache nothing fills),
 * found by the look: refused here, before anything stops. With sm121:preflight, check reports them.
 * A spare's are the plan's reason not to surge there (./surge), no refusal of the run.
 */
export function enginesRefuse(seen: SiteObservation, spares: ReadonlySet<string>, preflight: boolean): string[] {
  if (preflight) return [];
  const engines = Object.entries(seen.preflight).filter(([d]) => !spares.has(d));
  return engines.flatMap(([d, p]) => p.fatal.map((f) => `${d}: ${say(f)}`));
}
