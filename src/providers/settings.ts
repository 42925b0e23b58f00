/**
 * The settings every serve operation gets besides its bundle: how to reach the nodes, what this run
 * may do, where the gateway file is.
 */
import type { RunOverrides } from "../render/overrides";

/**
 * How the provider reaches the nodes: stored in each resource's state (the secrets as Pulumi
 * secrets), so that delete and read reach them from any checkout. Each field with its default
 * beside it; the dial's defaults are remote/ssh's CONNECTION_DEFAULTS.
 */
export interface ConnectionSettings {
  /** The stack: who holds the node locks this operation takes. Default: this process (remote runName). */
  owner?: string;
  /** How long to wait for a node another operation holds, in seconds (sm121:lockWaitS). Default 60. */
  lockWaitS?: number;
  /** The known_hosts file the host keys are checked against (sm121:knownHosts). Default ~/.ssh/known_hosts. */
  knownHosts: string;
  /** strict: an unknown host key is refused; accept-new: taken once, recorded (sm121:hostKeys). Default strict. */
  hostKeys: "strict" | "accept-new";
  /** The stack's secret sm121:sshPrivateKey, offered first. Default none: ssh-agent, then the key files. */
  privateKey?: string;
  /** The key files that logged in at the program's look (remote/login), offered after ssh-agent. Default none. */
  privateKeys?: string[];
  /** The stack's secret sm121:sshPassphrase, for privateKey. Default none. */
  passphrase?: string;
  /** How long one dial may take, to the end of login, in milliseconds. Default 10000 (CONNECTION_DEFAULTS). */
  dialTimeoutMs?: number;
}

export interface Allowances {
  /** Protected nodes this run may change. */
  protected: string[];
  experimental: boolean;
  /** Restart even when nothing changed. */
  restart: boolean;
  /** SM121_ALLOW_TAKEOVER: nodes where this run may stop another stack's deployment. */
  takeover?: string[];
  /** SM121_TIMEOUT_S and SM121_MIN_MEM_GIB: this run's readiness wait and memory gate, no part of the bundle. */
  overrides?: RunOverrides;
}

/** Where the gateway file is, so that a failed serve can disable its endpoints at once. */
export type { GatewaySettings } from "../gateway/file.render";
