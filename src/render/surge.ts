/**
 * A surge (issue 31): a replicas: entry with a spare group (`spare:`, recipe/spare) starts the new
 * recipe on the spare before any replica of the roll stops, and stops it there once the last
 * replica answers again, so that the set never has fewer replicas serving than it declares. The
 * spare then is free again: the site stays true (each replica on its own nodes), and the spare
 * keeps its room for the next roll. Decided at plan time, from what the look saw on the spare;
 * when it cannot be, the set rolls one at a time, and the plan says why.
 */
import type { Spare } from "../recipe/types";
import { fitRefusal, type Fit } from "./memfit";
import { rollWords, type ReplicaSet } from "./replicas";
import type { DeploymentBundle } from "./types";

/** What the plan knows of the spare group when it decides. */
export interface SpareLook {
  spare: Spare;
  /** The surge's bundle: the entry's recipe rendered on the spare's nodes. */
  bundle: DeploymentBundle;
  /** The spare's nodes that are protected. */
  protectedNodes: string[];
  /** What else holds a spare node: "s1 serves roll-other" (declared there, or running there). */
  busy: string[];
  /** The look could not reach a spare node: one line a node. */
  unreachable: string[];
  /** What the engine would refuse at start there (the HF cache, a file it opens). */
  fatal: string[];
  /** The memory fit of the new recipe on the spare's nodes (render/memfit). */
  fit: Fit;
}

export type SurgeVerdict = { go: true } | { go: false; why: string };

/** Whether the set surges onto its spare in this run, or why not. */
export function surgeVerdict(set: ReplicaSet, look: SpareLook): SurgeVerdict {
  const nodes = look.spare.nodes.join(", ");
  if (set.roll === "all") return { go: false, why: `the set restarts all at once (${set.allBecause ?? "roll: all"})` };
  const no = (why: string): SurgeVerdict => ({ go: false, why });
  if (look.unreachable.length > 0) return no(`the look could not reach it (${look.unreachable.join("; ")})`);
  if (look.protectedNodes.length > 0) {
    return no(`${look.protectedNodes.join(", ")} ${look.protectedNodes.length === 1 ? "is" : "are"} protected`);
  }
  if (look.busy.length > 0) return no(`${nodes} is busy: ${look.busy.join("; ")}`);
  if (look.fatal.length > 0) return no(`the engine would refuse to start there: ${look.fatal.join("; ")}`);
  const refused = fitRefusal(look.fit, look.bundle.recipeFile);
  if (refused !== undefined) return no(`the new recipe does not fit there: ${refused}`);
  return { go: true };
}

/** The plan's line for a set with a spare: the surge in words, or the roll and why there is none. */
export function surgeWords(set: ReplicaSet, spare: Spare, v: SurgeVerdict): string {
  const nodes = spare.nodes.join(", ");
  const name = spare.deployment.name;
  if (!v.go) return `${rollWords(set)}; no surge onto ${nodes}: ${v.why}`;
  const last = set.members[set.members.length - 1] ?? name;
  return (
    `surges ${set.model} onto ${nodes} first: ${name} starts the new recipe there and answers, ` +
    `then ${set.members.join(", then ")}, each stopped only once the one before it answers; ` +
    `${name} stops once ${last} answers; none of ${set.members.length} down`
  );
}
