/**
 * The surges of a run (render/surge): for each set of replicas whose entry declares a spare group,
 * what the plan-time look saw there decides whether the new recipe starts on the spare first; the
 * plan's lines say each set's roll or surge. (Two Surge resources wrap the set's roll:
 * components/surge.)
 */
import type { Recipe, Site, Spare } from "../recipe/types";
import { fitLines, fitOf } from "../render/memfit";
import { leaveWords } from "../gateway/roll.render";
import { drainOf, rollWords, type ReplicaPlace, type ReplicaSet } from "../render/replicas";
import { surgeVerdict, surgeWords, type SurgeVerdict } from "../render/surge";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";
import { msg } from "../text/messages";
import { gatewayModelOf } from "./files";
import type { SurgePlan } from "./types";

/** The spare group of a set: the one its replicas: entry declares. */
function spareOfSet(site: Site, set: ReplicaSet): Spare | undefined {
  const entries = new Set(site.deployments.filter((d) => set.members.includes(d.name)).map((d) => d.replicaOf));
  return site.spares.find((s) => entries.has(s.of));
}

/** The set's bundle identities, by deployment: what `start` and `end` compare between ups. */
function identities(set: ReplicaSet, bundles: readonly DeploymentBundle[]): Record<string, string> {
  return Object.fromEntries(set.members.map((d) => [d, bundles.find((b) => b.deployment === d)?.identity ?? ""]));
}

/**
 * The members of a set this run rolls: found on their nodes by the look (something of them runs),
 * not as declared (`steady`: what the look found running as declared; none with SM121_RESTART=1).
 * A first up, where nothing of the set runs yet, rolls nothing: it has nothing to surge for.
 */
export function rollingMembers(
  set: ReplicaSet,
  bundles: readonly DeploymentBundle[],
  seen: Pick<SiteObservation, "holders">,
  steady: ReadonlySet<string>,
): string[] {
  const found = (d: string) =>
    (bundles.find((b) => b.deployment === d)?.nodes ?? []).some((n) =>
      (seen.holders[n.node] ?? []).some((h) => h.deployment === d && h.held),
    );
  return set.members.filter((d) => !steady.has(d) && found(d));
}

/**
 * What each set with a spare does in this run, from what the look saw on the spare's nodes: it
 * surges only when a replica of it rolls (rollingMembers), so that the plan and the up agree.
 */
export function surgePlans(
  site: Site,
  sets: readonly ReplicaSet[],
  bundles: readonly DeploymentBundle[],
  surgeBundles: readonly DeploymentBundle[],
  recipes: ReadonlyMap<string, Recipe>,
  seen: SiteObservation,
  steady: ReadonlySet<string>,
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
    const rolls = rollingMembers(set, bundles, seen, steady).length > 0;
    const verdict: SurgeVerdict = !rolls
      ? { go: false, why: msg("surge.whyNoRoll") }
      : surgeVerdict(set, {
          spare,
          bundle,
          protectedNodes: spare.nodes.filter((n) => site.nodes[n]?.protected === true),
          busy: [...declared, ...running],
          unreachable: seen.unknown[name] ?? [],
          fatal: seen.preflight[name]?.fatal ?? [],
          fit,
        });
    const words = surgeWords(set, spare, verdict);
    const wiring = { model: gatewayModelOf(site, bundle), identities: identities(set, bundles) };
    return [{ set, spare, bundle, fit, verdict, words, ...wiring, drain: drainOf(bundle, site.drainS) }];
  });
}

/**
 * The plan's lines for the sets with a member the look did not find running as declared (not
 * `steady`): the spares' memory fit, then each set's roll or surge. A restart that only the state
 * knows of (a rotated secret, a failed last up) is said by each replica's own line.
 */
export function rollLines(
  sets: readonly ReplicaSet[],
  plans: ReadonlyArray<Pick<SurgePlan, "set" | "fit" | "words">>,
  steady: ReadonlySet<string>,
  places: ReadonlyMap<string, ReplicaPlace> = new Map(),
): string[] {
  const rolling = sets.filter((set) => set.members.some((d) => !steady.has(d)));
  // How its replicas leave the rotation: a line of its own after the set's.
  const words = (set: ReplicaSet) => {
    const said = plans.find((p) => p.set === set)?.words ?? rollWords(set);
    const leave = leaveWords(set.members, places);
    return leave === undefined ? [said] : [said, leave];
  };
  const spares = plans.filter((p) => rolling.includes(p.set));
  return [...spares.map((p) => fitLines(p.fit).join("\n")), ...rolling.flatMap(words)];
}
