/**
 * The steps a run takes with the gateway file on the way, each computed by the plan and carried out
 * here, on the file through ./edits (its one writer):
 * - a failed serve: the deployment's endpoints disabled at once;
 * - a replica of a roll (render/replicas, ./roll rollStep): its entries are held out of the file, it
 *   leaves the rotation the way the gateway and the engine allow (its step's `leave`), and once it
 *   answers again its entries come back;
 * - a surge (render/surge): its endpoints added beside the replicas' once it answers, and dropped
 *   before it stops.
 * What each step does is said in the up's output, in the operator's language.
 */
import type { SshAuth } from "../remote";
import { sha256 as sha } from "../render/identity";
import type { ReplicaPlace } from "../render/replicas";
import type { DeploymentBundle } from "../render/types";
import { msg, t } from "../text/messages";
import { edit, where, type Place } from "./edits.serve";
import { disableEndpoints, type GatewayModel, type GatewaySettings } from "./file.render";

export function placeOf(g: GatewaySettings, auth: SshAuth): Place {
  return { path: g.path, format: g.format, auth, ...(g.node !== undefined && { node: g.node }) };
}

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** A failed serve: the deployment's endpoints disabled in the file now (a warning when that fails). */
export async function disableFailed(
  p: Place,
  deployment: string,
  nodes: readonly string[],
  log: (m: string) => void,
): Promise<void> {
  const which = nodes.map((node) => ({ deployment, node }));
  await edit(
    p,
    (text) => {
      if (text === "") return { result: undefined };
      const d = disableEndpoints(p.format, text, which, "failed");
      return { content: { ...d, restartNote: msg("state.gw.failed", { deployment }) }, result: undefined };
    },
    log,
  ).catch((err: unknown) => log(t("serve.gatewayDisableFailed", { deployment, why: errorText(err) })));
}

/** A replica's entries held out of the file for its restart: the file before, and as written. */
export interface Held {
  place: Place;
  deployment: string;
  before: string;
  written: string;
}

/**
 * A replica of a roll, before its engine stops (its engine serves now): its entries leave the file,
 * and it leaves the rotation as its step says: a gateway that reads the file again sends it nothing
 * new, and the drain waits for what it runs; an engine that refuses new requests at its stop is
 * stopped at once (the gateway sends each refused request to another replica: LITELLM_ROUTER),
 * finishing what runs; otherwise the drain waits for a quiet moment. Returns the hold, for `rejoin`.
 */
export async function leave(
  r: ReplicaPlace,
  g: { place: Place; nodes: readonly string[] } | undefined,
  b: Pick<DeploymentBundle, "deployment" | "nodes">,
  auth: SshAuth,
  log: (m: string) => void,
): Promise<Held | undefined> {
  const step = r.step;
  const place = { index: r.index, of: r.of, model: r.model };
  const held = g === undefined ? undefined : await hold(g.place, b.deployment, g.nodes, log);
  if (g !== undefined) {
    const format = g.place.format;
    log(t(step?.leave === "gateway" ? "serve.rollOut" : "serve.rollHeld", { ...place, format }));
  }
  if (step?.leave === "engine") {
    log(t("serve.rollStopsAtOnce", { grace: step.graceS }));
    return held;
  }
  if (r.drain !== undefined) {
    const { drainEngine } = await import("../serve/drain");
    await drainEngine(b, auth, r.drain, log).catch((err: unknown) => {
      log(t("state.drainFailed", { deployment: b.deployment, why: errorText(err) }));
    });
  }
  return held;
}

/** The replica's entries disabled in the file as it is ("restarting"); undefined: there is no file yet. */
async function hold(
  p: Place,
  deployment: string,
  nodes: readonly string[],
  log: (m: string) => void,
): Promise<Held | undefined> {
  const which = nodes.map((node) => ({ deployment, node }));
  return edit(
    p,
    (before) => {
      if (before === "") return { result: undefined };
      const d = disableEndpoints(p.format, before, which, "restarting");
      const content = { ...d, restartNote: msg("state.gw.rollHold", { deployment }) };
      return { content, result: { place: p, deployment, before, written: d.text } };
    },
    log,
  ).catch((err: unknown) => {
    log(t("serve.gatewayDisableFailed", { deployment, why: errorText(err) }));
    return undefined;
  });
}

/**
 * The replica answers again: the file as it was before its restart, when nothing else wrote it
 * since (otherwise the up's gateway resource writes it whole at the end of the run).
 */
export async function rejoin(h: Held, log: (m: string) => void): Promise<void> {
  await edit(
    h.place,
    (now) => {
      if (sha(now) !== sha(h.written)) {
        log(t("serve.gatewayChanged", { where: where(h.place) }));
        return { result: undefined };
      }
      const restartNote = msg("state.gw.rollRelease", { deployment: h.deployment });
      return { content: { text: h.before, warnings: [], restartNote }, result: undefined };
    },
    log,
  ).catch((err: unknown) => log(t("serve.gatewayEnableFailed", { deployment: h.deployment, why: errorText(err) })));
}

/** The surge answers: its endpoints added to the file beside the replicas'. false: there is no file yet. */
export async function addSurge(
  p: Place,
  model: GatewayModel,
  apiKey: boolean,
  log: (m: string) => void,
): Promise<boolean> {
  const { addEndpoints } = await import("./surge.render");
  const restartNote = msg("state.gw.surge", { deployment: model.deployment, model: model.model });
  return edit(
    p,
    (text) => {
      if (text === "") return { result: false };
      return {
        content: { text: addEndpoints(p.format, text, model, { apiKey }), warnings: [], restartNote },
        result: true,
      };
    },
    log,
  );
}

/** The roll is over: the surge's endpoints leave the file as it is, before the surge stops. */
export async function dropSurge(
  p: Place,
  deployment: string,
  nodes: readonly string[],
  log: (m: string) => void,
): Promise<void> {
  const { dropEndpoints } = await import("./surge.render");
  const restartNote = msg("state.gw.surgeEnd", { deployment });
  await edit(
    p,
    (text) => {
      if (text === "") return { result: undefined };
      return {
        content: { text: dropEndpoints(p.format, text, deployment, nodes), warnings: [], restartNote },
        result: undefined,
      };
    },
    log,
  );
}
