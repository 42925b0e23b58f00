/**
 * The settings every serve operation gets besides its bundle: how to reach the nodes, what this run
 * may do, where the gateway file is.
 */
import type { RunOverrides } from "../render/overrides";
import type { NodeConn } from "../render/types";

export interface ConnectionSettings {
  /** The stack: who holds the node locks this operation takes. */
  owner?: string;
  /** How long to wait for a node another operation holds. */
  lockWaitS?: number;
  knownHosts: string;
  hostKeys: "strict" | "accept-new";
  /** The stack's secret sm121:sshPrivateKey: offered first. */
  privateKey?: string;
  /** The key files' material that logged in at the program's look (remote/login): offered after ssh-agent. */
  privateKeys?: string[];
  passphrase?: string;
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
export interface GatewaySettings {
  path: string;
  format: "sm121" | "litellm" | "llama-swap";
  node?: { name: string; conn: NodeConn };
}
