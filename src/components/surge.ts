/**
 * The Surge resources of a run's surges (src/plan/surge decides them): two wrap each set's roll
 * (providers/surge), `start` before its first replica, `end` after its last.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { Resource } from "@pulumi/pulumi/resource";
import type { ConnectionSettings } from "../providers/settings";
import { Surge, type SurgeInputs } from "../providers/surge";
import type { SurgePhase } from "../providers/wire";
import type { RunWiring, SurgePlan } from "../plan/types";
import { say } from "../text/messages";

export interface SurgeWiring {
  run: RunWiring;
  secrets: Record<string, pulumi.Output<string>>;
  connection: pulumi.Input<ConnectionSettings>;
  /** Their provider and their place (the Site component). */
  opts: pulumi.CustomResourceOptions;
}

/** One end of a surge. */
function surge(w: SurgeWiring, plan: SurgePlan, phase: SurgePhase, extra: Partial<SurgeInputs>, after: Resource[]) {
  const { run } = w;
  return new Surge(
    `${plan.bundle.deployment}-${phase}`,
    {
      phase,
      bundle: plan.bundle,
      go: plan.verdict.go,
      // Pulumi shows and compares the input: the same English bytes whatever the operator's language.
      why: plan.verdict.go ? "" : say(plan.verdict.why, "en"),
      set: plan.identities,
      secrets: w.secrets,
      connection: w.connection,
      run: {
        ...(run.gateway !== undefined && { gateway: run.gateway }),
        model: plan.model,
        apiKey: run.apiKey,
        owner: run.owner,
        keepBackups: run.keepBackups,
        ...(plan.drain !== undefined && { drain: plan.drain }),
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
