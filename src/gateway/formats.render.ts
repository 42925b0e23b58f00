/**
 * The gateway file as LiteLLM's proxy and llama-swap read it, with disabled endpoints kept each
 * gateway's own way (checked with their own loaders: LiteLLM 1.108.7's Router, llama-swap's
 * config.LoadConfig; docs/operating.md):
 * - LiteLLM: `model_list` holds one entry per enabled endpoint. The proxy has no switch for an
 *   entry (a listed entry is routed to), so a disabled one stays in the file's head as a comment,
 *   the entry itself commented out under a `# disabled: <model> on <node> (<url>): <why>` line.
 * - llama-swap: one peer per enabled endpoint. Its loader refuses a peer without models ("peer
 *   models can not be empty") and has no switch for one either, so a disabled peer stays in the
 *   file's head as a comment too, the same way.
 */
import { LITELLM_ROUTER } from "./roll.render";
import {
  Document,
  isMap,
  isNode,
  isScalar,
  isSeq,
  parseDocument,
  Scalar,
  stringify,
  type Pair,
  type YAMLMap,
} from "yaml";
import { msg, t, type Msg } from "../text/messages";
import { stringOf } from "../text/unknown";

export interface GatewayEndpoint {
  node: string;
  url: string;
  /** The node's bind address is reachable from the gateway (not loopback elsewhere). */
  reachable: boolean;
}

export interface GatewayModel {
  deployment: string;
  model: string;
  /** serving | failed | stopped | drifted | starting | unknown | removed | destroyed */
  status: string;
  endpoints: GatewayEndpoint[];
  /** Its engine takes no API key (gr8, DGPP): the file never sends it sm121:apiKey. */
  keyless?: boolean;
}

export interface GatewayFile {
  text: string;
  warnings: string[];
  /** Which restart makes the gateway read the file: said where it is printed. */
  restartNote: Msg;
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

/** `why`: the reason as the file writes it (English); `reason`: the same, to be said in the operator's language. */
export type ResolvedEndpoint = GatewayEndpoint & { enabled: boolean; why?: string; reason?: Msg };

export interface Resolved {
  m: GatewayModel;
  endpoints: ResolvedEndpoint[];
}

/** A file's name for one endpoint: LiteLLM's model_info.id, llama-swap's peer. */
export const peerId = (deployment: string, node: string): string => `${deployment}-${node}`;

const KEPT = "A disabled endpoint stays here as a comment";

/** `# disabled: qwen38 on spark2 (http://127.0.0.1:8000): why`, without its `#`. */
const disabledLine = (model: string, node: string, url: string, why: string) => {
  return ` disabled: ${model} on ${node} (${url}): ${why}`;
};

/** A YAML value as comment lines (without their `#`), indented under its `disabled:` line. */
function commented(value: unknown): string[] {
  return stringify(value)
    .trimEnd()
    .split("\n")
    .map((l) => `   ${l}`);
}

function litellmEntry(model: string, deployment: string, e: ResolvedEndpoint, apiKey: string) {
  return {
    model_name: model,
    litellm_params: { model: `openai/${model}`, api_base: `${e.url}/v1`, api_key: apiKey },
    model_info: { id: peerId(deployment, e.node) },
  };
}

const ROUTER_NOTE =
  " router_settings: a model has replicas: a failed request is retried (num_retries), then sent to " +
  "another replica with the one that failed left out (enable_weighted_failover); no cooldowns.";

/** Whether the file sends sm121:apiKey to a model's endpoints: the key is set and its engine takes one. */
const sendsKey = (opts: GatewayOptions, m: GatewayModel): boolean => opts.apiKey && m.keyless !== true;

export function litellm(resolved: Resolved[], opts: GatewayOptions, warnings: string[]): GatewayFile {
  const apiKey = (m: GatewayModel) => (sendsKey(opts, m) ? `os.environ/${GATEWAY_KEY_VAR}` : LITELLM_PLACEHOLDER_KEY);
  const list = resolved.flatMap(({ m, endpoints }) => {
    return endpoints.filter((e) => e.enabled).map((e) => litellmEntry(m.model, m.deployment, e, apiKey(m)));
  });
  const disabled = resolved.flatMap(({ m, endpoints }) =>
    endpoints
      .filter((e) => !e.enabled)
      .flatMap((e) => [
        disabledLine(m.model, e.node, e.url, e.why ?? ""),
        ...commented([litellmEntry(m.model, m.deployment, e, apiKey(m))]),
      ]),
  );
  const keyLine = opts.apiKey
    ? ` api_key: the engines' key (sm121:apiKey), read from $${GATEWAY_KEY_VAR} in the proxy's environment.`
    : " api_key: the engines have no key (sm121:apiKey is not set); LiteLLM needs one, so a placeholder is sent.";
  const head = [" Written by sm121. LiteLLM proxy model_list; one entry per enabled endpoint.", keyLine];
  const keyless = [
    ...new Set(resolved.filter(({ m }) => opts.apiKey && m.keyless === true).map(({ m }) => m.deployment)),
  ];
  if (keyless.length > 0)
    head.push(` ${keyless.join(", ")}: the engine takes no key, so the placeholder is sent there, never the key.`);
  if (disabled.length > 0) head.push(` ${KEPT} (LiteLLM has no switch for an entry):`, ...disabled);
  const replicated =
    resolved.some(({ endpoints }) => endpoints.length >= 2) ||
    new Set(resolved.map(({ m }) => m.model)).size < resolved.length;
  if (replicated) head.push(ROUTER_NOTE);
  const doc = new Document({ model_list: list, ...(replicated && { router_settings: LITELLM_ROUTER }) });
  doc.commentBefore = head.join("\n");
  const restartNote = msg(opts.apiKey ? "gateway.litellmKeyNote" : "gateway.litellmNote", { var: GATEWAY_KEY_VAR });
  return { text: doc.toString(), warnings, restartNote };
}

/** The warning for a model that several llama-swap peers serve: its plain name does not route. */
function plainNameWarning(model: string, ids: readonly string[]): string {
  const names = ids.map((i) => `${i}/${model}`).join(t("gateway.or"));
  return t("gateway.plainName", { model, count: ids.length, ids: ids.join(", "), names });
}

/**
 * llama-swap routes a plain model name only when exactly one peer lists it; each peer's models stay
 * reachable as `<peer>/<model>`, the names its /v1/models shows.
 */
export function llamaSwap(resolved: Resolved[], opts: GatewayOptions, warnings: string[]): GatewayFile {
  type Peer = { proxy: string; apiKey?: Scalar; models: string[] };
  const peers: Record<string, Peer> = {};
  const disabled: string[] = [];
  const servedBy = new Map<string, string[]>();
  // The key is a macro that llama-swap fills from its own environment; the file never holds it.
  // llama-swap pastes the variable's value over the macro in the file's text before it parses it,
  // escaping only \ and " (proxy/config substituteEnvMacros): in double quotes, any key it takes
  // reads back exactly; bare, a key with `: `, ` #`, a quote or a backslash would not.
  const keyRef = () => Object.assign(new Scalar(`\${env.${GATEWAY_KEY_VAR}}`), { type: Scalar.QUOTE_DOUBLE });
  const key = (m: GatewayModel) => (sendsKey(opts, m) ? { apiKey: keyRef() } : {});
  for (const { m, endpoints } of resolved) {
    for (const e of endpoints) {
      const peer = peerId(m.deployment, e.node);
      const entry: Peer = { proxy: e.url, ...key(m), models: [m.model] };
      if (!e.enabled) {
        disabled.push(disabledLine(m.model, e.node, e.url, e.why ?? ""), ...commented({ [peer]: entry }));
        continue;
      }
      peers[peer] = entry;
      servedBy.set(m.model, [...(servedBy.get(m.model) ?? []), peer]);
    }
  }
  for (const [model, ids] of servedBy) if (ids.length >= 2) warnings.push(plainNameWarning(model, ids));
  // llama-swap's schema requires `models` (local models); sm121 writes remote peers only.
  const doc = new Document({ models: {}, peers });
  const head = [" Written by sm121. llama-swap peers: each serving node as a remote OpenAI upstream."];
  if (disabled.length > 0) head.push(` ${KEPT} (llama-swap has no switch for a peer):`, ...disabled);
  doc.commentBefore = head.join("\n");
  const restartNote = msg(opts.apiKey ? "gateway.llamaKeyNote" : "gateway.llamaNote", { var: GATEWAY_KEY_VAR });
  return { text: doc.toString(), warnings, restartNote };
}

const keyOf = (pair: Pair): unknown => (isScalar(pair.key) ? pair.key.value : pair.key);

/**
 * Endpoints disabled in a LiteLLM or llama-swap file as it is (other entries, and comments, stay
 * as they are): `nodeOf` picks them by id and names their node (undefined: leave it), `why` says
 * why. Each goes from its list into the file's head, commented out under its `disabled:` line.
 */
export function disableYaml(
  format: "litellm" | "llama-swap",
  text: string,
  nodeOf: (id: string) => string | undefined,
  why: string,
): string {
  const doc = parseDocument(text);
  const gone: string[] = [];
  if (format === "litellm") {
    const list = doc.get("model_list", true);
    if (!isSeq(list)) return text;
    list.items = list.items.filter((item) => {
      type Entry = { model_name?: string; litellm_params?: { api_base?: string }; model_info?: { id?: string } };
      const entry = (isNode(item) ? item.toJSON() : item) as Entry | null;
      const node = entry?.model_info?.id === undefined ? undefined : nodeOf(entry.model_info.id);
      if (node === undefined) return true;
      const url = (entry?.litellm_params?.api_base ?? "").replace(/\/v1$/, "");
      gone.push(disabledLine(entry?.model_name ?? "", node, url, why), ...commented([entry]));
      return false;
    });
  } else {
    const peers = doc.get("peers", true) as YAMLMap | undefined;
    if (!isMap(peers)) return text;
    peers.items = peers.items.filter((pair) => {
      const peer = String(keyOf(pair));
      const node = nodeOf(peer);
      if (node === undefined) return true;
      const value: unknown = isNode(pair.value) ? pair.value.toJSON() : pair.value;
      const entry = value as { proxy?: unknown; models?: unknown } | null;
      const models = Array.isArray(entry?.models) ? entry.models.map(String).join(", ") : "";
      gone.push(disabledLine(models, node, stringOf(entry?.proxy), why), ...commented({ [peer]: entry }));
      return false;
    });
  }
  if (gone.length > 0) doc.commentBefore = [doc.commentBefore ?? "", ...gone].filter((l) => l !== "").join("\n");
  return doc.toString();
}
