/**
 * The gateway backend file (seed 001 "The gateway backend file"): one model per deployment, one
 * endpoint per serving node. An endpoint is enabled when the gateway can reach the node and the
 * deployment is not down, failed or starting; a model never ends with no enabled endpoint (the
 * first stays enabled, with a warning). Also as LiteLLM's proxy model_list and llama-swap peers.
 */
import { Scalar, stringify } from "yaml";
import type { GatewayFormat } from "../recipe/types";

export interface GatewayEndpoint {
  node: string;
  url: string;
  /** The node's bind address is reachable from the gateway (not loopback elsewhere). */
  reachable: boolean;
}

export interface GatewayModel {
  deployment: string;
  model: string;
  /** serving | failed | stopped | drifted | starting | unknown */
  status: string;
  endpoints: GatewayEndpoint[];
}

export interface GatewayFile {
  text: string;
  warnings: string[];
  /** Which restart makes the gateway read the file. */
  restartNote: string;
}

export interface GatewayOptions {
  /** sm121:apiKey is set: the engines want it as a bearer key, which the gateway reads from $SM121_API_KEY. */
  apiKey: boolean;
}

/** The variable a gateway reads the engines' key from; its value is `pulumi config get sm121:apiKey`. */
export const GATEWAY_KEY_VAR = "SM121_API_KEY";

/**
 * LiteLLM's openai provider refuses to send a request without a key ("Missing credentials"); an
 * engine started without one accepts any bearer token, so a literal placeholder routes.
 */
export const LITELLM_PLACEHOLDER_KEY = "sm121-no-key";

export interface Resolved {
  m: GatewayModel;
  endpoints: Array<GatewayEndpoint & { enabled: boolean; why?: string }>;
}

const UNSERVED = new Set(["down", "failed", "starting", "stopped", "unknown"]);

/**
 * The gateway rejects a model with no enabled endpoint (seed 001), so the first endpoint of such a
 * model stays enabled, with a warning: it is enabled, not disabled, in every format.
 */
function keepFirst<E extends { node: string; enabled: boolean; why?: string }>(model: string, endpoints: E[], warnings: string[]): void {
  const first = endpoints[0];
  if (first === undefined || endpoints.some((e) => e.enabled)) return;
  warnings.push(`model ${model}: no endpoint is usable (${first.why ?? "disabled"}); ${first.node} stays enabled so that the gateway accepts the config`);
  first.enabled = true;
  delete first.why;
}

/** Which endpoints are enabled, and why the others are not. */
export function resolveEndpoints(models: GatewayModel[], warnings: string[]): Resolved[] {
  return models.map((m) => {
    const endpoints = m.endpoints.map((e) => {
      const why = !e.reachable ? "the gateway cannot reach its bind address" : UNSERVED.has(m.status) ? `the deployment is ${m.status}` : undefined;
      return { ...e, enabled: why === undefined, ...(why !== undefined && { why }) };
    });
    keepFirst(m.model, endpoints, warnings);
    return { m, endpoints };
  });
}

const peerId = (deployment: string, node: string) => `${deployment}-${node}`;

function litellm(resolved: Resolved[], opts: GatewayOptions, warnings: string[]): GatewayFile {
  const apiKey = opts.apiKey ? `os.environ/${GATEWAY_KEY_VAR}` : LITELLM_PLACEHOLDER_KEY;
  const list = resolved.flatMap(({ m, endpoints }) =>
    endpoints.filter((e) => e.enabled).map((e) => ({
      model_name: m.model,
      litellm_params: { model: `openai/${m.model}`, api_base: `${e.url}/v1`, api_key: apiKey },
      model_info: { id: peerId(m.deployment, e.node) },
    })),
  );
  const disabled = resolved.flatMap(({ m, endpoints }) => endpoints.filter((e) => !e.enabled).map((e) => `# disabled: ${m.model} on ${e.node} (${e.url}): ${e.why ?? ""}`));
  const keyLine = opts.apiKey
    ? `# api_key: the engines' key (sm121:apiKey), read from $${GATEWAY_KEY_VAR} in the proxy's environment.`
    : "# api_key: the engines have no key (sm121:apiKey is not set); LiteLLM needs one, so a placeholder is sent.";
  const head = ["# Written by sm121. LiteLLM proxy model_list; one entry per enabled endpoint.", keyLine, ...disabled];
  const load = "litellm --config <file> (or include: [<file>] in your proxy config)";
  const restartNote = opts.apiKey
    ? `LiteLLM reads its config at start: set ${GATEWAY_KEY_VAR} in the proxy's environment to the engines' key (pulumi config get sm121:apiKey) and restart it: ${load}`
    : `LiteLLM reads its config at start: restart the proxy: ${load}`;
  return { text: `${head.join("\n")}\n${stringify({ model_list: list })}`, warnings, restartNote };
}

/**
 * llama-swap routes a plain model name only when exactly one peer lists it; each peer's models stay
 * reachable as `<peer>/<model>`, the names its /v1/models shows.
 */
function llamaSwap(resolved: Resolved[], opts: GatewayOptions, warnings: string[]): GatewayFile {
  const peers: Record<string, { proxy: string; apiKey?: Scalar; models: string[] }> = {};
  // llama-swap pastes the variable's value over the macro in the file's text before it parses it,
  // escaping only \ and " (proxy/config substituteEnvMacros): in double quotes, any key it takes
  // reads back exactly; bare, a key with `: `, ` #`, a quote or a backslash would not.
  const keyRef = () => Object.assign(new Scalar(`\${env.${GATEWAY_KEY_VAR}}`), { type: Scalar.QUOTE_DOUBLE });
  const servedBy = new Map<string, string[]>();
  for (const { m, endpoints } of resolved) {
    for (const e of endpoints.filter((x) => x.enabled)) {
      const id = peerId(m.deployment, e.node);
      // The key is a macro that llama-swap fills from its own environment; the file never holds it.
      peers[id] = { proxy: e.url, ...(opts.apiKey && { apiKey: keyRef() }), models: [m.model] };
      servedBy.set(m.model, [...(servedBy.get(m.model) ?? []), id]);
    }
  }
  for (const [model, ids] of servedBy) {
    if (ids.length < 2) continue;
    warnings.push(`model ${model} is served by ${ids.length} llama-swap peers (${ids.join(", ")}): llama-swap does not route the plain name "${model}" then; clients ask for ${ids.map((i) => `${i}/${model}`).join(" or ")}, or give the deployments distinct served model names`);
  }
  const restartNote = opts.apiKey
    ? `llama-swap loads this file with: ${GATEWAY_KEY_VAR}=<the engines' key, pulumi config get sm121:apiKey> llama-swap -config <file> -watch-config (it refuses to load the file when ${GATEWAY_KEY_VAR} is unset)`
    : "llama-swap loads this file with: llama-swap -config <file> -watch-config (-watch-config reloads it on every change; without it, restart llama-swap)";
  // llama-swap's schema requires `models` (local models); sm121 writes remote peers only.
  return { text: `# Written by sm121. llama-swap peers: each serving node as a remote OpenAI upstream.\n${stringify({ models: {}, peers })}`, warnings, restartNote };
}

const SM121_NOTE = "the gateway reads its config only at start: point it at this file (--config or PULSE_GATEWAY_CONFIG), make sure PULSE_QWEN_BACKENDS is not set (it replaces the file's endpoints), then restart it (e.g. systemctl --user restart pulse-qwen38)";

export function gatewayFile(format: GatewayFormat, models: GatewayModel[], opts: GatewayOptions): GatewayFile {
  const warnings: string[] = [];
  const resolved = resolveEndpoints(models, warnings);
  if (format === "litellm") return litellm(resolved, opts, warnings);
  if (format === "llama-swap") return llamaSwap(resolved, opts, warnings);
  const doc = {
    models: resolved.map(({ m, endpoints }) => ({
      name: m.model,
      deployment: m.deployment,
      status: m.status,
      endpoints: endpoints.map((e) => ({ node: e.node, url: e.url, enabled: e.enabled, ...(e.why !== undefined && { disabled: e.why }) })),
    })),
  };
  return { text: `${JSON.stringify(doc, null, 2)}\n`, warnings, restartNote: SM121_NOTE };
}

/** Is `host` a loopback address, reachable only from the node itself? */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host.startsWith("127.") || host === "::1";
}

/**
 * A failed deployment's endpoints disabled in a file that sm121 wrote (the failure path of `up`
 * cannot wait for the next full render): sm121 JSON keeps them, disabled, but for the first when
 * that would leave the model with none (with a warning); LiteLLM and llama-swap drop the
 * deployment's entries.
 */
export function disableDeployment(format: GatewayFormat, text: string, deployment: string): { text: string; warnings: string[] } {
  const warnings: string[] = [];
  if (format === "sm121") {
    const doc = JSON.parse(text) as { models?: Array<{ name?: string; deployment?: string; status?: string; endpoints?: Array<{ node: string; url: string; enabled: boolean; disabled?: string }> }> };
    for (const m of doc.models ?? []) {
      if (m.deployment !== deployment) continue;
      m.status = "failed";
      const eps = (m.endpoints ?? []).map((e): { node: string; url: string; enabled: boolean; why?: string } => ({ node: e.node, url: e.url, enabled: false, why: "the deployment is failed" }));
      keepFirst(m.name ?? deployment, eps, warnings);
      m.endpoints = eps.map(({ why, ...e }) => ({ ...e, ...(why !== undefined && { disabled: why }) }));
    }
    return { text: `${JSON.stringify(doc, null, 2)}\n`, warnings };
  }
  const lines = text.split("\n");
  const out: string[] = [];
  // Entries are YAML blocks; drop the ones whose id or key names the deployment.
  let skipping = false;
  for (const l of lines) {
    if (format === "litellm" && /^ {2}- /.test(l)) skipping = false;
    if (format === "llama-swap" && /^ {2}\S/.test(l)) skipping = l.trimStart().startsWith(`${deployment}-`);
    if (format === "litellm" && new RegExp(`^ {6}id: ${deployment}-`).test(l)) {
      // The id line comes last in an entry: drop the entry from its "- model_name" line.
      while (out.length > 0 && !/^ {2}- /.test(out[out.length - 1] ?? "")) out.pop();
      out.pop();
      continue;
    }
    if (!skipping) out.push(l);
  }
  return { text: out.join("\n"), warnings };
}
