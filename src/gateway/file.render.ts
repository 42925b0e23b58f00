/**
 * The gateway backend file (seed 001 "The gateway backend file"): one model per deployment, one
 * endpoint per serving node. An endpoint is enabled when the gateway can reach the node and the
 * deployment is not down, failed, starting or removed. A downed or removed deployment's endpoint
 * stays in the file, disabled, in each format's own way (./formats): sm121's JSON says
 * `enabled: false` and why (and, as seed 001's gateway rejects a model with no enabled endpoint,
 * keeps a model's first endpoint enabled then, with a warning); LiteLLM's proxy has no switch for
 * a model_list entry, so the entry stays as a comment; a llama-swap peer stays with no models.
 */
import type { GatewayFormat } from "../recipe/types";
import type { NodeConn } from "../render/types";
import { msg, say, type Msg } from "../text/messages";
import { disableYaml, litellm, llamaSwap, peerId } from "./formats.render";
import type { GatewayFile, GatewayModel, GatewayOptions, Resolved, ResolvedEndpoint } from "./formats.render";

export type { GatewayEndpoint, GatewayFile, GatewayModel, GatewayOptions } from "./formats.render";
export type { Resolved, ResolvedEndpoint } from "./formats.render";
export { GATEWAY_KEY_VAR, LITELLM_PLACEHOLDER_KEY, peerId } from "./formats.render";

/** Where the gateway file is (sm121:gateway), as the plan passes it to the providers. */
export interface GatewaySettings {
  path: string;
  format: GatewayFormat;
  node?: { name: string; conn: NodeConn };
}

const UNSERVED = new Set(["down", "failed", "starting", "stopped", "unknown", "removed", "destroyed"]);

/** Why a deployment in this state gets no traffic. */
export function statusReason(status: string): Msg {
  if (status === "removed") return msg("gateway.whyRemoved");
  if (status === "destroyed") return msg("gateway.whyDestroyed");
  if (status === "restarting") return msg("gateway.whyRestarting");
  if (status === "ended") return msg("gateway.whyEnded");
  return msg("gateway.whyStatus", { status });
}

/** The reason as the file and the plan write it: English, so that a change of language changes neither. */
export function statusWhy(status: string): string {
  return say(statusReason(status), "en");
}

/**
 * Seed 001's gateway rejects a model with no enabled endpoint, so the first endpoint of such a
 * model stays enabled, with a warning: it is enabled, not disabled. LiteLLM and llama-swap load a
 * file whose model has none, so theirs stay disabled.
 */
function keepFirst<E extends { node: string; enabled: boolean; why?: string; reason?: Msg }>(
  model: string,
  endpoints: E[],
  warnings: Msg[],
): void {
  const first = endpoints[0];
  if (first === undefined || endpoints.some((e) => e.enabled)) return;
  // A reason read back from a file sm121 wrote earlier is its English text; it is quoted as it is.
  const quoted = first.why === undefined ? msg("gateway.disabled") : msg("gateway.quoted", { text: first.why });
  const why = first.reason ?? quoted;
  warnings.push(msg("gateway.noUsable", { model, why, node: first.node }));
  first.enabled = true;
  delete first.why;
  delete first.reason;
}

/** Which endpoints are enabled, and why the others are not; `warnings` said where they are printed. */
export function resolveEndpoints(format: GatewayFormat, models: GatewayModel[], warnings: Msg[]): Resolved[] {
  return models.map((m) => {
    const endpoints = m.endpoints.map((e): ResolvedEndpoint => {
      const served = UNSERVED.has(m.status) ? statusReason(m.status) : undefined;
      const reason = !e.reachable ? msg("gateway.whyUnreachable") : served;
      if (reason === undefined) return { ...e, enabled: true };
      return { ...e, enabled: false, why: say(reason, "en"), reason };
    });
    if (format === "sm121") keepFirst(m.model, endpoints, warnings);
    return { m, endpoints };
  });
}

/** The file, with its warnings and restart note in the locale of the process that writes it. */
export function gatewayFile(format: GatewayFormat, models: GatewayModel[], opts: GatewayOptions): GatewayFile {
  const said: Msg[] = [];
  const resolved = resolveEndpoints(format, models, said);
  const warnings = said.map((w) => say(w));
  if (format === "litellm") return litellm(resolved, opts, warnings);
  if (format === "llama-swap") return llamaSwap(resolved, opts, warnings);
  const doc = {
    models: resolved.map(({ m, endpoints }) => ({
      name: m.model,
      deployment: m.deployment,
      status: m.status,
      endpoints: endpoints.map((e) => ({
        node: e.node,
        url: e.url,
        enabled: e.enabled,
        ...(e.why !== undefined && { disabled: e.why }),
      })),
    })),
  };
  return { text: `${JSON.stringify(doc, null, 2)}\n`, warnings, restartNote: msg("gateway.sm121Note") };
}

/** Which endpoints to disable: some deployments' nodes, or every one in the file. */
export type EndpointSet = Array<{ deployment: string; node: string }> | "all";

interface Sm121Endpoint {
  node: string;
  url: string;
  enabled: boolean;
  disabled?: string;
}

interface Sm121Doc {
  models?: Array<{ name?: string; deployment?: string; status?: string; endpoints?: Sm121Endpoint[] }>;
}

/**
 * Endpoints disabled in a file as it is on disk, without the deployments' outcomes (a failed
 * serve disables its own at once; a destroy disables all of them before it stops the engines):
 * each format keeps them, disabled, its own way. `status` is the deployments' new status.
 */
export function disableEndpoints(
  format: GatewayFormat,
  text: string,
  which: EndpointSet,
  status: "failed" | "destroyed" | "restarting" | "ended",
): { text: string; warnings: string[] } {
  const reason = statusReason(status);
  const why = say(reason, "en");
  const nodeOf = new Map(which === "all" ? [] : which.map((e) => [peerId(e.deployment, e.node), e.node]));
  const hit = (deployment: string, node: string) => which === "all" || nodeOf.has(peerId(deployment, node));
  // A peer of a file sm121 wrote is <deployment>-<node>; for "all" it names itself.
  if (format !== "sm121") {
    return { text: disableYaml(format, text, (id) => (which === "all" ? id : nodeOf.get(id)), why), warnings: [] };
  }
  const warnings: Msg[] = [];
  const doc = JSON.parse(text) as Sm121Doc;
  for (const m of doc.models ?? []) {
    const d = m.deployment ?? "";
    if (!(m.endpoints ?? []).some((e) => hit(d, e.node))) continue;
    m.status = status;
    type Endpoint = { node: string; url: string; enabled: boolean; why?: string; reason?: Msg };
    const eps = (m.endpoints ?? []).map((e): Endpoint => {
      if (hit(d, e.node)) return { node: e.node, url: e.url, enabled: false, why, reason };
      return { node: e.node, url: e.url, enabled: e.enabled, ...(e.disabled !== undefined && { why: e.disabled }) };
    });
    keepFirst(m.name ?? d, eps, warnings);
    m.endpoints = eps.map(({ why: w, reason: _, ...e }) => ({ ...e, ...(w !== undefined && { disabled: w }) }));
  }
  return { text: `${JSON.stringify(doc, null, 2)}\n`, warnings: warnings.map((w) => say(w)) };
}
