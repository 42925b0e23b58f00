/**
 * A surge's entry in a gateway file as it is on disk (render/surge): added beside the replicas'
 * when the surge answers, so that a gateway that reads its file again (llama-swap with
 * -watch-config) routes to it while a replica restarts; every other entry, and the comments, stay
 * as they are.
 */
import { isMap, isNode, isScalar, isSeq, parseDocument } from "yaml";
import type { GatewayFormat } from "../recipe/types";
import { gatewayFile, peerId, type GatewayModel, type GatewayOptions } from "./file.render";

/** `text` with the endpoints of `model` added, each format its own way; `text` when it has no list to add to. */
export function addEndpoints(format: GatewayFormat, text: string, model: GatewayModel, opts: GatewayOptions): string {
  const entry = gatewayFile(format, [model], opts).text;
  if (format === "sm121") {
    const doc = JSON.parse(text) as { models?: unknown[] };
    const add = JSON.parse(entry) as { models: unknown[] };
    doc.models = [...(doc.models ?? []), ...add.models];
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
  const doc = parseDocument(text);
  const add = parseDocument(entry);
  const key = format === "litellm" ? "model_list" : "peers";
  const into = doc.get(key, true);
  const from = add.get(key, true);
  if (format === "litellm") {
    if (!isSeq(into) || !isSeq(from)) return text;
    into.items.push(...from.items);
  } else {
    if (!isMap(into) || !isMap(from)) return text;
    into.items.push(...from.items);
  }
  return doc.toString();
}

/**
 * `text` without the endpoints of `deployment` on `nodes` (a surge that leaves), each format its own
 * way; every other entry, and the comments, stay as they are.
 */
export function dropEndpoints(
  format: GatewayFormat,
  text: string,
  deployment: string,
  nodes: readonly string[],
): string {
  const ids = new Set(nodes.map((n) => peerId(deployment, n)));
  if (format === "sm121") {
    const doc = JSON.parse(text) as { models?: Array<{ deployment?: string }> };
    doc.models = (doc.models ?? []).filter((m) => m.deployment !== deployment);
    return `${JSON.stringify(doc, null, 2)}\n`;
  }
  const doc = parseDocument(text);
  if (format === "litellm") {
    const list = doc.get("model_list", true);
    if (!isSeq(list)) return text;
    list.items = list.items.filter((item) => {
      const entry = (isNode(item) ? item.toJSON() : item) as { model_info?: { id?: string } } | null;
      return !ids.has(entry?.model_info?.id ?? "");
    });
  } else {
    const peers = doc.get("peers", true);
    if (!isMap(peers)) return text;
    peers.items = peers.items.filter((pair) => !ids.has(String(isScalar(pair.key) ? pair.key.value : pair.key)));
  }
  return doc.toString();
}
