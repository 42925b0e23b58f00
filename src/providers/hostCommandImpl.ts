/** The work of HostCommand, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import { hostFor, withHosts } from "../remote";
import type { NodeConn } from "../render/types";
import { authOf, providerLog } from "./common";
import type { ConnectionSettings } from "./engineDeployment";

interface Props {
  node: string;
  conn: NodeConn;
  connection: ConnectionSettings;
  create: string[];
  delete: string[];
  ranAt?: string;
  output?: string;
}

async function runAll(p: Props, commands: string[], step: string): Promise<string> {
  if (commands.length === 0) return "";
  return withHosts([{ node: p.node, conn: p.conn }], authOf(p.connection), async (hosts) => {
    const h = hostFor(hosts, p.node);
    let out = "";
    for (const cmd of commands) {
      providerLog(p.node)(`${step}: ${cmd}`);
      const res = await h.run(`set -euo pipefail\n${cmd}\n`, { step: `${step} hook \`${cmd}\`` });
      out += res.stdout;
    }
    return out.slice(-2000);
  }, { lock: true });
}

export async function diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
  const changes = JSON.stringify(olds.create) !== JSON.stringify(news.create) || JSON.stringify(olds.delete) !== JSON.stringify(news.delete) || JSON.stringify(olds.conn) !== JSON.stringify(news.conn);
  return { changes };
}

export async function create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
  const output = await runAll(inputs, inputs.create, "before_serve");
  return { id: `${inputs.node}-hook`, outs: { ...inputs, ranAt: new Date().toISOString(), output } };
}

export async function update(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  if (JSON.stringify(olds.create) === JSON.stringify(news.create)) return { outs: { ...news, ranAt: olds.ranAt, output: olds.output } };
  const output = await runAll(news, news.create, "before_serve");
  return { outs: { ...news, ranAt: new Date().toISOString(), output } };
}

export async function remove(_id: string, props: Props): Promise<void> {
  await runAll(props, props.delete, "after_stop");
}
