/**
 * What the plan says of what happened between runs (./nodelife): pure functions of what the look
 * saw. `lifeFindings` adds to a deployment's drift on a node where the engine is down (a reboot, a
 * stop by the memory tripwire): the reason an up restarts it, counted against sm121:liveness as its
 * health. `lifePlanLines` are the plan's own lines: what to change before a tripped engine starts
 * into the same load, a group that a reboot took down, and a deployment the keeper gave up on.
 */
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { msg, say, type Msg } from "../text/messages";
import { rebooted, type NodeLife, type TripwireStop } from "./nodelife";
import type { NodeState } from "./probe";

const gib = (kib: number) => (Math.round((kib / 1048576) * 10) / 10).toFixed(1);

/** The tripwire's stop as a message naming its node. */
export function trippedMsg(node: string, t: TripwireStop): Msg {
  return msg("keep.look.tripped", { node, at: t.at, avail: gib(t.memAvailableKiB), floor: gib(t.floorKiB) });
}

/**
 * A reboot and a stop by the tripwire, where the engine does not run on the node (an engine that
 * runs again is no finding): each a message naming the node.
 */
export function lifeFindings(nb: NodeBundle, st: NodeState): Msg[] {
  const life = st.life;
  if (life === undefined || !nb.runs || st.running) return [];
  const out: Msg[] = [];
  if (rebooted(life)) out.push(msg("keep.look.rebooted", { node: nb.node }));
  if (life.tripwire !== undefined) out.push(trippedMsg(nb.node, life.tripwire));
  return out;
}

/** Per deployment, per node: what the look read of its life there. */
export type Lives = Readonly<Record<string, Readonly<Record<string, NodeLife>>>>;

/** The plan's lines of what happened between runs, in the reader's language. */
export function lifePlanLines(bundles: readonly DeploymentBundle[], lives: Lives): string[] {
  const out: string[] = [];
  for (const b of bundles) {
    const here = lives[b.deployment] ?? {};
    const nodes = b.nodes.map((n) => n.node);
    const back = nodes.filter((n) => rebooted(here[n]));
    if (back.length > 0) {
      const group = nodes.length > 1 ? msg("keep.plan.asGroup", { nodes: nodes.join(", ") }) : "";
      out.push(say(msg("keep.plan.rebooted", { deployment: b.deployment, nodes: back.join(", "), group })));
    }
    for (const n of nodes) {
      const t = here[n]?.tripwire;
      if (t === undefined) continue;
      out.push(say(msg("keep.plan.tripped", { deployment: b.deployment, what: trippedMsg(n, t), file: b.recipeFile })));
    }
    const gaveUp = nodes.map((n) => here[n]?.gaveUp).find((g) => g !== undefined);
    if (gaveUp !== undefined) {
      const { count, at, error } = gaveUp;
      out.push(say(msg("keep.plan.gaveUp", { deployment: b.deployment, count, at, error })));
    }
  }
  return out;
}

/**
 * `sm121 status`'s words of what happened to a deployment on a node between runs, in the reader's
 * language: a reboot and a stop by the tripwire where the engine is down, the keeper's last action
 * (rank 0 keeps it) and that it gave up.
 */
export function lifeStatusLines(nb: NodeBundle, st: NodeState): string[] {
  const life = st.life;
  if (life === undefined) return [];
  const out = lifeFindings(nb, st).map((m) => say(m));
  const last = life.keeper?.last;
  if (last !== undefined) {
    const after =
      last.servingAfterS !== undefined
        ? msg("keep.status.servingAfter", { s: last.servingAfterS })
        : last.error !== undefined
          ? msg("keep.status.error", { error: last.error })
          : "";
    const why = last.why.map((m) => say(m)).join("; ");
    out.push(say(msg("keep.status.last", { node: nb.node, action: last.action, at: last.at, why, after })));
  }
  const g = life.gaveUp;
  if (g !== undefined)
    out.push(say(msg("keep.status.gaveUp", { node: nb.node, count: g.count, at: g.at, error: g.error })));
  return out;
}
