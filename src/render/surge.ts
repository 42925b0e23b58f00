/**
 * A surge (issue 31): a replicas: entry with a spare group (`spare:`, recipe/spare) starts the new
 * recipe on the spare before any replica of the roll stops, and stops it there once the last
 * replica answers again, so that the set never has fewer replicas serving than it declares. The
 * spare then is free again: the site stays true (each replica on its own nodes), and the spare
 * keeps its room for the next roll. Decided at plan time, from what the look saw on the spare;
 * when it cannot be, the set rolls one at a time, and the plan says why.
 */
import type { Spare } from "../recipe/types";
import type { Fit } from "./memfit";
import { fitRefusalMsg } from "./fitrefusal";
import { inTurn, rollWords, type ReplicaSet } from "./replicas";
import type { DeploymentBundle } from "./types";
import { listMsg, msg, say, t, type Msg } from "../text/messages";

/** What the plan knows of the spare group when it decides. */
export interface SpareLook {
  spare: Spare;
  /** The surge's bundle: the entry's recipe rendered on the spare's nodes. */
  bundle: DeploymentBundle;
  /** The spare's nodes that are protected. */
  protectedNodes: string[];
  /** What else holds a spare node: "s1 serves roll-other" (declared there, or running there). */
  busy: Msg[];
  /** The look could not reach a spare node: one message a node (serve/observe). */
  unreachable: Msg[];
  /** What the engine would refuse at start there (the HF cache, a file it opens), as the look found it. */
  fatal: Msg[];
  /** The memory fit of the new recipe on the spare's nodes (render/memfit). */
  fit: Fit;
}

/** `why` is a message: the plan says it in the reader's language, the Surge resource keeps it in English. */
export type SurgeVerdict = { go: true } | { go: false; why: Msg };

/** Whether the set surges onto its spare in this run, or why not. */
export function surgeVerdict(set: ReplicaSet, look: SpareLook): SurgeVerdict {
  const nodes = look.spare.nodes.join(", ");
  if (set.roll === "all") return { go: false, why: msg("surge.whyAll", { because: set.allBecause ?? "roll: all" }) };
  const no = (why: Msg): SurgeVerdict => ({ go: false, why });
  // The look's findings (unreachable, fatal) are messages: said with the rest of the why.
  if (look.unreachable.length > 0) return no(msg("surge.whyUnreachable", { lines: listMsg(look.unreachable, "semi") }));
  const guarded = look.protectedNodes;
  // A list of nodes, not a counted noun: one node or several, in every language.
  if (guarded.length > 0) {
    return no(
      msg(guarded.length === 1 ? "surge.whyProtected" : "surge.whyProtectedMany", { nodes: guarded.join(", ") }),
    );
  }
  if (look.busy.length > 0) return no(msg("surge.whyBusy", { nodes, busy: listMsg(look.busy, "semi") }));
  if (look.fatal.length > 0) return no(msg("surge.whyFatal", { fatal: listMsg(look.fatal, "semi") }));
  const refused = fitRefusalMsg(look.fit, look.bundle.recipeFile);
  if (refused !== undefined) return no(msg("surge.whyUnfit", { refused }));
  return { go: true };
}

/** The plan's line for a set with a spare: the surge in words, or the roll and why there is none. */
export function surgeWords(set: ReplicaSet, spare: Spare, v: SurgeVerdict): string {
  const nodes = spare.nodes.join(", ");
  const name = spare.deployment.name;
  if (!v.go) return t("surge.noSurge", { roll: rollWords(set), nodes, why: say(v.why) });
  const last = set.members[set.members.length - 1] ?? name;
  const members = inTurn(set.members);
  return t("surge.plan", { model: set.model, nodes, spare: name, members, last, count: set.members.length });
}
