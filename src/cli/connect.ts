/**
 * Auth and connections for the CLI. The host keys come from the site's `knownHosts` (verified as
 * `hostKeys` says, strict by default, by src/remote). The private key is the program's: the stack's
 * `sm121:sshPrivateKey` secret when it is set (read through the Pulumi CLI into memory, never
 * written to disk), else `--identity FILE` or `$SM121_SSH_KEY` (a path), else ssh-agent
 * (`$SSH_AUTH_SOCK`), else ~/.ssh/id_ed25519 or ~/.ssh/id_rsa. A passphrase, when the key has one,
 * comes from the stack's `sm121:sshPassphrase`, else `$SM121_SSH_PASSPHRASE`. Every command opens
 * one connection per node.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import type { Site } from "../recipe/types";
import { connect, hostFor, TransportError, type Host, type SshAuth } from "../remote";
import type { HostKeyRefusal } from "../remote/knownhosts";
import type { DeploymentBundle, NodeBundle, NodeConn } from "../render/types";
import { expandHome } from "../text/home";
import { UsageError, str, type Parsed } from "./args";
import { t } from "../text/messages";
import type { PulumiStack } from "./pulumi";

export type KeySource = "stack" | "identity" | "env" | "agent" | "default" | "none";

export interface CliAuth {
  auth: SshAuth;
  source: KeySource;
  /** The key file, when one is used. */
  keyFile?: string;
}

function readKey(file: string, flag: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch (e) {
    throw new UsageError(t("auth.keyUnreadable", { flag, file, reason: e instanceof Error ? e.message : String(e) }));
  }
}

export function cliAuth(
  site: Pick<Site, "knownHosts" | "hostKeys">,
  p: Parsed,
  env: NodeJS.ProcessEnv = process.env,
  stack?: Pick<PulumiStack, "secret">,
): CliAuth {
  const base: SshAuth = {
    knownHosts: expandHome(site.knownHosts),
    hostKeys: site.hostKeys,
    dialTimeoutMs: 8_000,
    dialAttempts: 2,
  };
  const passphrase = stack?.secret("sm121:sshPassphrase") ?? env["SM121_SSH_PASSPHRASE"];
  const stackKey = stack?.secret("sm121:sshPrivateKey");
  if (stackKey !== undefined)
    return {
      auth: { ...base, privateKey: stackKey, ...(passphrase !== undefined && passphrase !== "" && { passphrase }) },
      source: "stack",
    };
  const withKey = (file: string, flag: string, source: KeySource): CliAuth => ({
    auth: {
      ...base,
      privateKey: readKey(file, flag),
      ...(passphrase !== undefined && passphrase !== "" && { passphrase }),
    },
    source,
    keyFile: file,
  });
  const identity = str(p, "identity");
  if (identity !== undefined) return withKey(expandHome(identity), "--identity", "identity");
  const fromEnv = env["SM121_SSH_KEY"];
  if (fromEnv !== undefined && fromEnv !== "") return withKey(expandHome(fromEnv), "$SM121_SSH_KEY", "env");
  const agent = env["SSH_AUTH_SOCK"];
  if (agent !== undefined && agent !== "") return { auth: { ...base, agent }, source: "agent" };
  for (const name of ["id_ed25519", "id_rsa"]) {
    const file = join(homedir(), ".ssh", name);
    if (existsSync(file)) return withKey(file, file, "default");
  }
  return { auth: base, source: "none" };
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

/** The deployment named by the first argument; a usage error lists the deployments. */
export function selectedDeployment(
  bundles: readonly DeploymentBundle[],
  name: string | undefined,
  stack: string,
): DeploymentBundle {
  const deployments = bundles.map((x) => x.deployment).join(", ") || "-";
  if (name === undefined) throw new UsageError(t("cli.needsDeployment", { deployments }));
  const b = bundles.find((x) => x.deployment === name);
  if (b === undefined) throw new UsageError(t("cli.unknownDeployment", { deployment: name, stack, deployments }));
  return b;
}

export function hostOf(hosts: Map<string, Host>, nb: Pick<NodeBundle, "node">): Host {
  return hostFor(hosts, nb.node);
}
