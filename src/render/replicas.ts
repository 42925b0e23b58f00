/**
 * Replica sets: the deployments that serve one model name (the name the gateway lists them under)
 * are replicas of it. An up that restarts several of them rolls them one at a time, in the site's
 * order with the replicas on protected nodes last, so that the others keep serving; `roll: all` on
 * a deployment, or SM121_ROLL=all for one run, restarts them all at once instead (a change that
 * cannot mix versions).
 */
import type { GatewayFormat, RollMode, Site } from "../recipe/types";
import { driverFor } from "../engines";
import type { DeploymentBundle } from "./types";
import { msg, say, t, type Msg } from "../text/messages";

/**
 * How a replica of a roll waits for the requests it is answering once the gateway sends it no
 * more: the engine's gauge of running requests on its /metrics, read until it is 0 or `boundS`
 * has passed.
 */
export interface Drain {
  path: string;
  running: string;
  boundS: number;
}

/**
 * How a replica leaves the rotation before its engine stops:
 * - `gateway`: the gateway reads the file again; once its entries are out, the drain waits for
 *   what it runs to finish (up to sm121:drainS), then it stops;
 * - `engine`: the gateway cannot be told, but the engine refuses new requests once it is told to
 *   stop and finishes what runs (vLLM's --shutdown-timeout): the gateway sends each refused one to
 *   another replica (LiteLLM's failover, gateway/roll.render LITELLM_ROUTER);
 * - `quiet`: neither: the drain waits for a moment when it runs nothing, and it stops then; what
 *   the gateway sends it in between is cut.
 */
export type Leave = "gateway" | "engine" | "quiet";

/** What a replica of a roll does with the gateway around its restart: the plan's, carried out by gateway/steps. */
export interface RollStep {
  /** The gateway file's format; none: the site has no sm121:gateway. */
  format?: GatewayFormat;
  leave: Leave;
  /** The seconds the engine finishes what runs once told to stop (vLLM's --shutdown-timeout); 0: it aborts. */
  graceS: number;
}

export interface ReplicaSet {
  /** The model name its replicas serve. */
  model: string;
  /** The deployments, in the order a roll restarts them. */
  members: string[];
  roll: RollMode;
  /** Why it restarts them all at once (the site entry or the run), when it does. */
  allBecause?: Msg;
  /** The deployment a surge starts on the spare group first, when it does (render/surge). */
  surge?: string;
}

/** What the engine of one replica knows of its set: its place in the roll. */
export interface ReplicaPlace {
  model: string;
  /** 1-based place in the roll. */
  index: number;
  of: number;
  roll: RollMode;
  /** The replica restarted before it (one at a time), whose first token it waits for. */
  after?: string;
  /** The surge that serves on the spare group during the roll (render/surge). */
  surge?: string;
  /** How it waits for its requests in flight before it stops; none: the engine exports no gauge of them. */
  drain?: Drain;
  /** How it leaves the gateway's rotation around its restart (one at a time). */
  step?: RollStep;
}

/**
 * The model name the gateway lists a deployment under before it is served (then, the name it
 * serves): the gateway's own, the recipe's served name, or the replicas: entry's or its own name.
 */
export function modelOf(site: Site, b: DeploymentBundle): string {
  const d = site.deployments.find((x) => x.name === b.deployment);
  return site.gateway?.model ?? b.readiness.servedName ?? d?.replicaOf ?? b.deployment;
}

/**
 * The sets of two or more replicas among `bundles` (already in the site's order). `runAll`:
 * SM121_ROLL=all for this run.
 */
export function replicaSets(site: Site, bundles: readonly DeploymentBundle[], runAll: boolean): ReplicaSet[] {
  const by = new Map<string, DeploymentBundle[]>();
  for (const b of bundles) by.set(modelOf(site, b), [...(by.get(modelOf(site, b)) ?? []), b]);
  const guarded = (b: DeploymentBundle) => b.nodes.some((n) => n.protected);
  const sets: ReplicaSet[] = [];
  for (const [model, all] of by) {
    if (all.length < 2) continue;
    const members = [...all.filter((b) => !guarded(b)), ...all.filter(guarded)].map((b) => b.deployment);
    const asked = site.deployments.filter((d) => members.includes(d.name) && d.roll === "all").map((d) => d.name);
    const entry = asked.length > 0 ? msg("roll.asked", { deployments: asked.join(", ") }) : undefined;
    const allBecause = runAll ? msg("roll.runAll") : entry;
    const roll = allBecause === undefined ? "one" : "all";
    sets.push({ model, members, roll, ...(allBecause !== undefined && { allBecause }) });
  }
  return sets;
}

/** How a deployment's engine drains (its driver's gauge of running requests), for `boundS` at most. */
export function drainOf(b: DeploymentBundle, boundS: number): Drain | undefined {
  const m = driverFor(b.engine).metrics;
  const running = m?.series.running;
  if (m === undefined || running === undefined || boundS <= 0) return undefined;
  return { path: m.path, running, boundS };
}

/** Each replica's place in its set's roll, by deployment; `drainS`: sm121:drainS. */
export function replicaPlaces(
  sets: readonly ReplicaSet[],
  bundles: readonly DeploymentBundle[],
  drainS: number,
  stepOf?: (b: DeploymentBundle) => RollStep,
): Map<string, ReplicaPlace> {
  const places = new Map<string, ReplicaPlace>();
  for (const s of sets) {
    s.members.forEach((d, i) => {
      const after = s.roll === "one" ? s.members[i - 1] : undefined;
      const b = bundles.find((x) => x.deployment === d);
      // Only a replica the gateway sends nothing new to drains: one that rolls on its own.
      const drain = b === undefined || s.roll !== "one" ? undefined : drainOf(b, drainS);
      const step = b === undefined || s.roll !== "one" ? undefined : stepOf?.(b);
      const place = { model: s.model, index: i + 1, of: s.members.length, roll: s.roll };
      places.set(d, {
        ...place,
        ...(after !== undefined && { after }),
        ...(s.surge !== undefined && { surge: s.surge }),
        ...(drain !== undefined && { drain }),
        ...(step !== undefined && { step }),
      });
    });
  }
  return places;
}

/** The plan's line for a set: "rolls qwen3-32b: a, then b; at most 1 of 2 down". */
export function rollWords(s: ReplicaSet): string {
  const count = s.members.length;
  if (s.roll === "all") {
    const because = s.allBecause === undefined ? "roll: all" : say(s.allBecause);
    return t("roll.all", { model: s.model, because, members: s.members.join(", "), count });
  }
  return t("roll.one", { model: s.model, members: inTurn(s.members), count });
}

/** `a, then b, then c`, in the reader's language. */
export function inTurn(names: readonly string[]): string {
  return names.reduce((before, next) => t("roll.then", { before, next }));
}
