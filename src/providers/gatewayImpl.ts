/**
 * The work of GatewayFragment, in the provider process. Check and diff are pure: the transport
 * to a gateway node (ssh2) and the formats' parsers (yaml) are loaded by the operations that
 * need them, not by the first check of every plan.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { NodeConn } from "../render/types";
import { sha256 as sha } from "../render/identity";
import { readPlaced, removePlaced, writePlaced } from "../serve/sitefile";
import { authOf, providerLog } from "./common";
import type { ConnectionSettings, GatewaySettings } from "./engineDeployment";
import type { GatewayWire } from "./gatewayFragment";

/** The form the provider works with (and the stored form of earlier releases). */
interface Props {
  path: string;
  format: string;
  content: string;
  warnings: string[];
  restartNote: string;
  node?: { name: string; conn: NodeConn };
  connection: ConnectionSettings;
  sha256?: string;
}

type Stored = GatewayWire | Props;

function isWire(p: Stored): p is GatewayWire {
  return "__file" in p;
}

function fromWire(p: Stored): Props {
  if (!isWire(p)) return p;
  const f = p.__file;
  const node = p.node !== undefined && f.conn !== undefined ? { name: p.node, conn: f.conn } : undefined;
  return { path: p.path, format: p.format, content: f.content, warnings: f.warnings, restartNote: f.restartNote, connection: p.connection, ...(node !== undefined && { node }), ...(p.sha256 !== undefined && { sha256: p.sha256 }) };
}

const nodeName = (p: Stored): string | undefined => (typeof p.node === "string" ? p.node : p.node?.name);

async function write(p: Props): Promise<string> {
  const log = providerLog("gateway");
  for (const w of p.warnings) log(`warning: ${w}`);
  // A different old file is kept as a backup (what the gateway ran with until it restarts).
  await writePlaced(p, authOf(p.connection), p.content, [sha(p.content)], "write the gateway file");
  log(`wrote ${p.format} backends to ${p.node === undefined ? "" : `${p.node.name}:`}${p.path}; ${p.restartNote}`);
  return sha(p.content);
}

async function current(p: Props): Promise<string> {
  return (await readPlaced(p, authOf(p.connection), "read the gateway file")) ?? "";
}

/** Whether this provider process has said why the file waits (Pulumi may diff it more than once). */
let said = false;

/**
 * Pure: what was written (or found by the last refresh) against the new content. While an engine
 * the file lists is being served, its content is not known at plan time: rewritten after.
 */
export async function diff(_id: string, olds: Stored, news: GatewayWire): Promise<pulumi.dynamic.DiffResult> {
  if (olds.path !== news.path || nodeName(olds) !== nodeName(news)) return { changes: true, replaces: ["path"], deleteBeforeReplace: true };
  const known = typeof news.__file === "object" && news.__file !== null && typeof news.__file.content === "string";
  if (!known) {
    if (!said) providerLog("gateway")("rewritten once the deployments it lists are served (their served model and status go into it)");
    said = true;
    return { changes: true };
  }
  // A state of an earlier release is rewritten once in this form (the same file).
  if (!isWire(olds)) return { changes: true };
  return { changes: olds.sha256 !== sha(news.__file.content) || JSON.stringify(olds.__file.served) !== JSON.stringify(news.__file.served) };
}

export async function create(inputs: GatewayWire): Promise<pulumi.dynamic.CreateResult> {
  return { id: inputs.path, outs: { ...inputs, sha256: await write(fromWire(inputs)) } };
}

export async function update(_id: string, _olds: Stored, news: GatewayWire): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: { ...news, sha256: await write(fromWire(news)) } };
}

export async function remove(_id: string, stored: Stored): Promise<void> {
  const props = fromWire(stored);
  await removePlaced(props, authOf(props.connection), "remove the gateway file");
}

export async function read(id: string, stored: Stored): Promise<pulumi.dynamic.ReadResult> {
  return { id, props: { ...stored, sha256: sha(await current(fromWire(stored))) } };
}

/** The failure path of a serve: the deployment's endpoints disabled in the file now. */
export async function disableInGateway(g: GatewaySettings, connection: ConnectionSettings, deployment: string): Promise<void> {
  const p: Props = { path: g.path, format: g.format, content: "", warnings: [], restartNote: "", connection, ...(g.node !== undefined && { node: g.node }) };
  const text = await current(p);
  if (text === "") return;
  const { disableDeployment } = await import("../render/gateway");
  const disabled = disableDeployment(g.format, text, deployment);
  await write({ ...p, content: disabled.text, warnings: disabled.warnings, restartNote: `${deployment} is failed: its endpoints are disabled; restart the gateway to apply` });
}
