/**
 * The gateway backend file (seed 001 "The gateway backend file"): one model per deployment, one
 * endpoint per serving node. An endpoint is enabled when the gateway can reach the node and the
 * deployment is not down, failed or starting; a model never ends with no enabled endpoint (the
 * first stays enabled, with a warning). Also as LiteLLM's proxy model_list and llama-swap peers.
 */
import { stringify } from "yaml";
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

interface Resolved {
  m: GatewayModel;
  endpoints: Array<GatewayEndpoint & { enabled: boolean; why?: string }>;
}

const UNSERVED = new Set(["down", "failed", "starting", "stopped", "unknown"]);

function resolve(models: GatewayModel[], warnings: string[]): Resolved[] {
  return models.map((m) => {
    const endpoints = m.endpoints.map((e) => {
      const why = !e.reachable ? "the gateway cannot reach its bind address" : UNSERVED.has(m.status) ? `the deployment is ${m.status}` : undefined;
      return { ...e, enabled: why === undefined, ...(why !== undefined && { why }) };
    });
    const first = endpoints[0];
    if (first !== undefined && !endpoints.some((e) => e.enabled)) {
      // The gateway rejects a model with no enabled endpoint, so the first stays enabled.
      first.enabled = true;
      warnings.push(`model ${m.model}: no endpoint is usable (${first.why ?? ""}); ${first.node} stays enabled so that the gateway accepts the config`);
    }
    return { m, endpoints };
  });
}

export function gatewayFile(format: GatewayFormat, models: GatewayModel[]): GatewayFile {
  const warnings: string[] = [];
  const resolved = resolve(models, warnings);
  if (format === "litellm") {
    const list = resolved.flatMap(({ m, endpoints }) =>
      endpoints.filter((e) => e.enabled).map((e) => ({
        model_name: m.model,
        litellm_params: { model: `openai/${m.model}`, api_base: `${e.url}/v1`, api_key: "os.environ/SM121_API_KEY" },
        model_info: { id: `${m.deployment}-${e.node}` },
      })),
    );
    const disabled = resolved.flatMap(({ m, endpoints }) => endpoints.filter((e) => !e.enabled).map((e) => `# disabled: ${m.model} on ${e.node} (${e.url}): ${e.why ?? ""}`));
    return { text: `# Written by sm121. LiteLLM proxy model_list; one entry per enabled endpoint.\n${disabled.join("\n")}${disabled.length > 0 ? "\n" : ""}${stringify({ model_list: list })}`, warnings, restartNote: "LiteLLM reads its config at start: restart the proxy (litellm --config <file>) to apply it" };
  }
  if (format === "llama-swap") {
    const peers: Record<string, { proxy: string; models: string[] }> = {};
    for (const { m, endpoints } of resolved) for (const e of endpoints.filter((x) => x.enabled)) peers[`${m.deployment}-${e.node}`] = { proxy: e.url, models: [m.model] };
    return { text: `# Written by sm121. llama-swap peers: each serving node as a remote OpenAI upstream.\n${stringify({ peers })}`, warnings, restartNote: "llama-swap reads its config at start (or with --watch-config): restart it to apply" };
  }
  const doc = {
    models: resolved.map(({ m, endpoints }) => ({
      name: m.model,
      deployment: m.deployment,
      status: m.status,
      endpoints: endpoints.map((e) => ({ node: e.node, url: e.url, enabled: e.enabled, ...(e.why !== undefined && { disabled: e.why }) })),
    })),
  };
  return {
    text: `${JSON.stringify(doc, null, 2)}\n`,
    warnings,
    restartNote: "the gateway reads its config only at start: point it at this file (--config or PULSE_GATEWAY_CONFIG), make sure PULSE_QWEN_BACKENDS is not set (it replaces the file's endpoints), then restart it (e.g. systemctl --user restart pulse-qwen38)",
  };
}

/** Is `host` a loopback address, reachable only from the node itself? */
export function isLoopback(host: string): boolean {
  return host === "localhost" || host.startsWith("127.") || host === "::1";
}

/**
 * A failed deployment's endpoints disabled in a file that sm121 wrote (the failure path of `up`
 * cannot wait for the next full render): sm121 JSON keeps them, disabled, unless that would leave
 * the model with none; LiteLLM and llama-swap drop the deployment's entries.
 */
export function disableDeployment(format: GatewayFormat, text: string, deployment: string): string {
  if (format === "sm121") {
    const doc = JSON.parse(text) as { models?: Array<{ deployment?: string; status?: string; endpoints?: Array<{ enabled?: boolean; disabled?: string }> }> };
    for (const m of doc.models ?? []) {
      if (m.deployment !== deployment) continue;
      m.status = "failed";
      const eps = m.endpoints ?? [];
      for (const e of eps) {
        e.enabled = false;
        e.disabled = "the deployment is failed";
      }
      // The gateway rejects a model with no enabled endpoint: the first stays enabled.
      if (eps[0] !== undefined) eps[0].enabled = true;
    }
    return `${JSON.stringify(doc, null, 2)}\n`;
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
  return out.join("\n");
}
