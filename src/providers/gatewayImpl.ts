/** The work of GatewayFragment, in the provider process. */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type * as pulumi from "@pulumi/pulumi";
import { hostFor, withHosts } from "../remote";
import type { NodeConn } from "../render/types";
import { nodePath, quote } from "../text/shell";
import { disableDeployment } from "../render/gateway";
import { sha256 as sha } from "../render/identity";
import { expandHome } from "../text/home";
import { authOf, providerLog } from "./common";
import type { ConnectionSettings, GatewaySettings } from "./engineDeployment";

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

const stamp = () => new Date().toISOString().replace(/[-:]/g, "").replace(/\.\d+Z$/, "Z");

async function onNode<T>(p: Props, script: string, step: string, read: (stdout: string) => T): Promise<T> {
  const n = p.node;
  if (n === undefined) throw new Error("no node");
  return withHosts([{ node: n.name, conn: n.conn }], authOf(p.connection), async (hosts) => {
    return read((await hostFor(hosts, n.name).run(script, { step })).stdout);
  });
}

async function write(p: Props): Promise<Props> {
  const log = providerLog("gateway");
  for (const w of p.warnings) log(`warning: ${w}`);
  if (p.node !== undefined) {
    const f = nodePath(p.path);
    const b64 = Buffer.from(p.content).toString("base64");
    await onNode(p, `mkdir -p "$(dirname ${f})"; printf '%s' ${quote(b64)} | base64 -d > ${f}.sm121-tmp; if [ -f ${f} ] && ! cmp -s ${f} ${f}.sm121-tmp; then cp -p ${f} ${f}.sm121-bak-${stamp()}; fi; mv ${f}.sm121-tmp ${f}`, "write the gateway file", () => undefined);
  } else {
    const file = expandHome(p.path);
    mkdirSync(dirname(file), { recursive: true });
    if (existsSync(file) && readFileSync(file, "utf8") !== p.content) copyFileSync(file, `${file}.sm121-bak-${stamp()}`);
    writeFileSync(`${file}.sm121-tmp`, p.content);
    renameSync(`${file}.sm121-tmp`, file);
  }
  log(`wrote ${p.format} backends to ${p.node === undefined ? "" : `${p.node.name}:`}${p.path}; ${p.restartNote}`);
  return { ...p, sha256: sha(p.content) };
}

async function current(p: Props): Promise<string> {
  if (p.node !== undefined) return onNode(p, `cat ${nodePath(p.path)} 2>/dev/null || true`, "read the gateway file", (s) => s);
  return existsSync(expandHome(p.path)) ? readFileSync(expandHome(p.path), "utf8") : "";
}

/** Against the file as it is: a failed serve may have disabled endpoints in it since the last write. */
export async function diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
  const moved = olds.path !== news.path || olds.node?.name !== news.node?.name;
  if (moved) return { changes: true, replaces: ["path"], deleteBeforeReplace: true };
  // During a preview the content may be unknown; the stored sha256 is all there is to compare.
  const known = typeof news.content === "string" && !news.content.startsWith("04da6b54-");
  const now = known ? sha(await current(olds)) : olds.sha256;
  return { changes: !known || now !== sha(news.content) };
}

export async function create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
  return { id: inputs.path, outs: await write(inputs) };
}

export async function update(_id: string, _olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: await write(news) };
}

export async function remove(_id: string, props: Props): Promise<void> {
  if (props.node !== undefined) await onNode(props, `rm -f ${nodePath(props.path)}`, "remove the gateway file", () => undefined);
  else rmSync(expandHome(props.path), { force: true });
}

export async function read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
  return { id, props: { ...props, sha256: sha(await current(props)) } };
}

/** The failure path of a serve: the deployment's endpoints disabled in the file now. */
export async function disableInGateway(g: GatewaySettings, connection: ConnectionSettings, deployment: string): Promise<void> {
  const p: Props = { path: g.path, format: g.format, content: "", warnings: [], restartNote: "", connection, ...(g.node !== undefined && { node: g.node }) };
  const text = await current(p);
  if (text === "") return;
  const disabled = disableDeployment(g.format, text, deployment);
  await write({ ...p, content: disabled.text, warnings: disabled.warnings, restartNote: `${deployment} is failed: its endpoints are disabled; restart the gateway to apply` });
}
