/** Connecting to a node of a bundle: local or ssh, with the operation's auth settings. */
import type { NodeConn } from "../render/types";
import type { Host } from "./host";
import { LocalHost } from "./local";
import { connectSsh, type SshAuth } from "./ssh";

export type { Host, RunOptions, RunResult } from "./host";
export type { SshAuth } from "./ssh";
export { CommandError, TransportError } from "./errors";

export function connect(node: string, conn: NodeConn, auth: SshAuth): Promise<Host> {
  if (conn.kind === "local") return Promise.resolve(new LocalHost(node));
  return connectSsh({ node, host: conn.host, port: conn.port, user: conn.user }, auth);
}

/** Runs `fn` with one connection per node, all nodes in parallel, closing every connection after. */
export async function withHosts<T>(
  nodes: ReadonlyArray<{ node: string; conn: NodeConn }>,
  auth: SshAuth,
  fn: (hosts: Map<string, Host>) => Promise<T>,
): Promise<T> {
  const settled = await Promise.allSettled(nodes.map((n) => connect(n.node, n.conn, auth)));
  const hosts = new Map<string, Host>();
  settled.forEach((s) => {
    if (s.status === "fulfilled") hosts.set(s.value.node, s.value);
  });
  try {
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed !== undefined) throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    return await fn(hosts);
  } finally {
    for (const h of hosts.values()) h.close();
  }
}
