/**
 * Auth and connections for the CLI: the login of the program and the providers (remote/login: the
 * stack's `sm121:sshPrivateKey`, read through the Pulumi CLI into memory and never written to disk,
 * then ssh-agent, then the key files OpenSSH would try, `--identity FILE` or `$SM121_SSH_KEY` first
 * among them, with `~/.ssh/config`'s entries), and the host keys of the site's `knownHosts`
 * (verified as `hostKeys` says, strict by default). A passphrase, when a key has one, comes from
 * the stack's `sm121:sshPassphrase`, else `$SM121_SSH_PASSPHRASE`. Every command opens one
 * connection per node.
 */
import { existsSync } from "node:fs";
import type { Site, WrittenSsh } from "../recipe/types";
import { connect, hostFor, TransportError, type Host, type SshAuth } from "../remote";
import type { HostKeyRefusal } from "../remote/knownhosts";
import { envSources, loginAuth, loginFor, loginHome, writtenOf, type Login } from "../remote/login";
import type { DeploymentBundle, NodeBundle, NodeConn } from "../render/types";
import { expandHome } from "../text/home";
import { UsageError, str, type Parsed } from "./args";
import { t } from "../text/messages";
import type { PulumiStack } from "./pulumi";

export interface CliAuth {
  auth: SshAuth;
  /** The keys and the agent offered, in order, and the key files left out (and why). */
  login: Login;
}

/**
 * The CLI's login to the site's nodes (or to `written`, for init, which has no site yet). A key
 * file named for this run that cannot be read is a usage error; the others are said by doctor.
 */
export function cliAuth(
  site: Pick<Site, "knownHosts" | "hostKeys"> & Partial<Pick<Site, "nodes">>,
  p: Parsed,
  env: NodeJS.ProcessEnv = process.env,
  stack?: Pick<PulumiStack, "secret">,
  written: readonly WrittenSsh[] = writtenOf(site.nodes ?? {}),
): CliAuth {
  const base: SshAuth = {
    knownHosts: expandHome(site.knownHosts),
    hostKeys: site.hostKeys,
    dialTimeoutMs: 8_000,
    dialAttempts: 2,
  };
  const passphrase = stack?.secret("sm121:sshPassphrase");
  const stackKey = stack?.secret("sm121:sshPrivateKey");
  const flag = str(p, "identity");
  const sources = envSources(env, {
    ...(stackKey !== undefined && { stackKey }),
    ...(passphrase !== undefined && { passphrase }),
    ...(flag !== undefined && { identity: flag }),
  });
  if (sources.identity !== undefined && !existsSync(expandHome(sources.identity))) {
    const named = flag !== undefined ? "--identity" : "$SM121_SSH_KEY";
    const file = expandHome(sources.identity);
    throw new UsageError(t("auth.keyUnreadable", { flag: named, file, reason: "ENOENT" }));
  }
  const login = loginFor(sources, written, loginHome(env["HOME"]));
  return { auth: { ...base, ...loginAuth(login, sources.passphrase) }, login };
}

export type Reached = { ok: true; host: Host } | { ok: false; error: Error };

export interface NodeTarget {
  node: string;
  conn: NodeConn;
}

/**
 * Like remote's withHosts (one connection per node, in parallel, all closed after), but a node that
 * cannot be reached is reported in the map instead of failing the command: status and doctor
 * report per node.
 */
export async function withNodes<T>(
  nodes: readonly NodeTarget[],
  auth: SshAuth,
  fn: (reached: Map<string, Reached>) => Promise<T>,
): Promise<T> {
  const unique = [...new Map(nodes.map((n) => [n.node, n])).values()];
  const settled = await Promise.allSettled(unique.map((n) => connect(n.node, n.conn, auth)));
  const reached = new Map<string, Reached>();
  settled.forEach((s, i) => {
    const name = unique[i]?.node ?? "";
    reached.set(
      name,
      s.status === "fulfilled"
        ? { ok: true, host: s.value }
        : { ok: false, error: s.reason instanceof Error ? s.reason : new Error(String(s.reason)) },
    );
  });
  try {
    return await fn(reached);
  } finally {
    for (const r of reached.values()) if (r.ok) r.host.close();
  }
}

/** How a connection failed, for the report: the host key, the login, or the network. */
export function connectFailure(e: Error): "host-key" | "auth" | "unreachable" {
  if (e instanceof TransportError && e.kind === "host-key") return "host-key";
  if (e instanceof TransportError && e.kind === "auth") return "auth";
  return "unreachable";
}

/** Why a host key was refused (changed, revoked, unknown) and its fingerprint, when that is the failure. */
export function hostKeyRefusalOf(e: Error): HostKeyRefusal | undefined {
  return e instanceof TransportError ? e.hostKey : undefined;
}

/** --node N, checked against the site: a usage error names the nodes there are. */
export function selectedNode(site: Site, p: Parsed): string | undefined {
  const n = str(p, "node");
  if (n !== undefined && site.nodes[n] === undefined)
    throw new UsageError(t("cli.unknownNode", { node: n, nodes: Object.keys(site.nodes).join(", ") }));
  return n;
}

/**
 * The deployment named by the first argument; a usage error lists the deployments. `orOnly`: with
 * no name, the site's only deployment (a command that reads, never one that stops).
 */
export function selectedDeployment(
  bundles: readonly DeploymentBundle[],
  name: string | undefined,
  stack: string,
  orOnly = false,
): DeploymentBundle {
  const deployments = bundles.map((x) => x.deployment).join(", ") || "-";
  const only = bundles.length === 1 ? bundles[0] : undefined;
  if (name === undefined && orOnly && only !== undefined) return only;
  if (name === undefined) throw new UsageError(t("cli.needsDeployment", { deployments }));
  const b = bundles.find((x) => x.deployment === name);
  if (b === undefined) throw new UsageError(t("cli.unknownDeployment", { deployment: name, stack, deployments }));
  return b;
}

export function hostOf(hosts: Map<string, Host>, nb: Pick<NodeBundle, "node">): Host {
  return hostFor(hosts, nb.node);
}
