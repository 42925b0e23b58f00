/**
 * The surges of a run (render/surge): for each set of replicas whose entry declares a spare group,
 * what the plan-time look saw there decides whether the new recipe starts on the spare first, and
 * two Surge resources wrap the set's roll (providers/surge): `start` before its first replica,
 * `end` after its last.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { Resource } from "@pulumi/pulumi/resource";
import type { Spare } from "../recipe/types";
import type { Recipe, Site } from "../recipe/types";
import { fitLines, fitOf, type Fit } from "../render/memfit";
import { drainOf, rollWords, type ReplicaSet } from "../render/replicas";
import { surgeVerdict, surgeWords, type SurgeVerdict } from "../render/surge";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import type { Owner } from "../serve/owner";
import type { ConnectionSettings, GatewaySettings } from "../providers/settings";
import { Surge, type SurgeInputs } from "../providers/surge";
import type { SurgePhase } from "../providers/wire";
import { gatewayModelOf } from "./gateway";
import { msg, say } from "../text/messages";

/** A set with a spare group, and what the plan decided for it. */
export interface SurgePlan {
  set: ReplicaSet;
  spare: Spare;
  bundle: DeploymentBundle;
  verdict: SurgeVerdict;
  /** The memory fit of the new recipe on the spare. */
  fit: Fit;
  /** The plan's line. */
  words: string;
}

/** The spare group of a set: the one its replicas: entry declares. */
function spareOfSet(site: Site, set: ReplicaSet): Spare | undefined {
  const entries = new Set(site.deployments.filter((d) => set.members.includes(d.name)).map((d) => d.replicaOf));
  return site.spares.find((s) => entries.has(s.of));
}

/** What each set with a spare does in this run, from what the look saw on the spare's nodes. */
export function surgePlans(
  site: Site,
  sets: readonly ReplicaSet[],
  bundles: readonly DeploymentBundle[],
  surgeBundles: readonly DeploymentBundle[],
  recipes: ReadonlyMap<string, Recipe>,
  seen: SiteObservation,
): SurgePlan[] {
  return sets.flatMap((set) => {
    const spare = spareOfSet(site, set);
    const bundle = surgeBundles.find((b) => b.deployment === spare?.deployment.name);
    if (spare === undefined || bundle === undefined) return [];
    const name = bundle.deployment;
    const declared = bundles.flatMap((b) =>
      b.nodes
        .filter((n) => spare.nodes.includes(n.node))
        .map((n) => msg("surge.busyDeclared", { node: n.node, deployment: b.deployment })),
    );
    const running = spare.nodes.flatMap((n) =>
      (seen.holders[n] ?? [])
        .filter((h) => h.held && h.deployment !== name && !bundles.some((b) => b.deployment === h.deployment))
        .map((h) => msg("surge.busyRunning", { node: n, deployment: h.deployment })),
    );
    const fit = fitOf(bundle, recipes.get(bundle.recipe), seen.models);
    const verdict = surgeVerdict(set, {
      spare,
      bundle,
      protectedNodes: spare.nodes.filter((n) => site.nodes[n]?.protected === true),
      busy: [...declared, ...running],
      unreachable: seen.unknown[name] ?? [],
      fatal: seen.preflight[name]?.fatal ?? [],
      fit,
    });
    return [{ set, spare, bundle, fit, verdict, words: surgeWords(set, spare, verdict) }];
  });
}

/**
 * The plan's lines for the sets with a member the look did not find running as declared (not
 * `steady`): the spares' memory fit, then each set's roll or surge. A restart that only the state
 * knows of (a rotated secret, a failed last up) is said by each replica's own line.
 */
export function rollLines(
  sets: readonly ReplicaSet[],
  plans: readonly SurgePlan[],
  steady: ReadonlySet<string>,
): string[] {
  const rolling = sets.filter((set) => set.members.some((d) => !steady.has(d)));
  const words = (set: ReplicaSet) => plans.find((p) => p.set === set)?.words ?? rollWords(set);
  const spares = plans.filter((p) => rolling.includes(p.set));
  return [...spares.map((p) => fitLines(p.fit).join("\n")), ...rolling.map(words)];
}

export interface SurgeWiring {
  site: Site;
  bundles: readonly DeploymentBundle[];
  secrets: Record<string, pulumi.Output<string>>;
  connection: pulumi.Input<ConnectionSettings>;
  gateway?: GatewaySettings;
  apiKey: boolean;
  owner: Owner;
  /** Their provider and their place (the Site component). */
  opts: pulumi.CustomResourceOptions;
}

/** The set's bundle identities, by deployment: what `start` and `end` compare between ups. */
function identities(set: ReplicaSet, bundles: readonly DeploymentBundle[]): Record<string, string> {
  return Object.fromEntries(set.members.map((d) => [d, bundles.find((b) => b.deployment === d)?.identity ?? ""]));
}

/** One end of a surge. */
function surge(w: SurgeWiring, plan: SurgePlan, phase: SurgePhase, extra: Partial<SurgeInputs>, after: Resource[]) {
  const drain = drainOf(plan.bundle, w.site.drainS);
  return new Surge(
    `${plan.bundle.deployment}-${phase}`,
    {
      phase,
      bundle: plan.bundle,
      go: plan.verdict.go,
      // Pulumi shows and compares the input: the same English bytes whatever the operator's language.
      why: plan.verdict.go ? "" : say(plan.verdict.why, "en"),
      set: identities(plan.set, w.bundles),
      secrets: w.secrets,
      connection: w.connection,
      run: {
        ...(w.gateway !== undefined && { gateway: w.gateway }),
        model: gatewayModelOf(w.site, plan.bundle),
        apiKey: w.apiKey,
        owner: w.owner,
        keepBackups: w.site.keepBackups,
        ...(drain !== undefined && { drain }),
      },
      ...extra,
    },
    { ...w.opts, ...(after.length > 0 && { dependsOn: after }) },
  );
}

/** The `start` of each surge, by the first replica of its set: that replica's engine comes after it. */
export function surgeStarts(w: SurgeWiring, plans: readonly SurgePlan[]): Map<string, Surge> {
  return new Map(plans.map((p) => [p.set.members[0] ?? "", surge(w, p, "start", {}, [])]));
}

/** The `end` of each surge: after every replica of its set (`engineOf`), with what its start did. */
export function surgeEnds(
  w: SurgeWiring,
  plans: readonly SurgePlan[],
  starts: ReadonlyMap<string, Surge>,
  engineOf: (deployment: string) => Resource | undefined,
): Surge[] {
  return plans.flatMap((p) => {
    const start = starts.get(p.set.members[0] ?? "");
    if (start === undefined) return [];
    const engines = p.set.members.flatMap((d) => engineOf(d) ?? []);
    const extra = { start: start.started.apply((s) => s ?? { started: false }) };
    return [surge(w, p, "end", extra, engines)];
  });
}
