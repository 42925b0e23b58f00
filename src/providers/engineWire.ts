/**
 * The properties of an EngineDeployment as Pulumi stores and shows them, and as the provider works
 * with them. Shown (and diffed by `pulumi preview --diff`): the deployment's name, its plan (one
 * fact a line, render/plan), the drift found on its nodes, its secrets and connection (each
 * `[secret]`). Carried but never shown: `__bundle`, the whole rendered bundle packed, and `__run`,
 * this run's allowances, preflight findings and gateway file.
 *
 * Stored outputs of any state version are read through ./stateVersion (`fromStored`).
 */
import type { DeploymentBundle } from "../render/types";
import type { ReplicaPlace } from "../render/replicas";
import type { DeploymentOutcome } from "../serve/outcome";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./settings";
import { unpack } from "./packed";
import { stale, upgrade, upgradeWords, type Upgraded } from "./stateVersion";
import type { Owner } from "../serve/owner";

export interface Findings {
  fatal: string[];
  warnings: string[];
  notes?: string[];
}

/** What the provider needs of this run that the plan does not show. */
export interface RunSettings {
  allow: Allowances;
  /** `sm121:preflight` on a preview: report the plan-time look's preflight findings. */
  preflight: boolean;
  /** The plan-time look's preflight findings on the nodes of this deployment. */
  findings: Findings;
  gateway?: GatewaySettings;
  /** The stack this run serves for (serve/owner): recorded on the nodes, checked before a stop. */
  owner?: Owner;
  /** sm121:keepBackups. */
  keepBackups?: number;
  /** The part of `drift` that is the engine's health (dead or hung): restarts for it are bounded. */
  health?: string[];
  /** sm121:liveness's bound on those restarts. */
  liveness?: { maxRestarts: number; windowS: number };
  /** Its place in its replica set's roll (render/replicas). */
  replica?: ReplicaPlace;
}

/** The stored and shown form. */
export interface EngineWire {
  deployment: string;
  plan: string;
  drift: string[];
  secrets: Record<string, string>;
  connection: ConnectionSettings;
  __bundle: string;
  __run: RunSettings;
  /**
   * Set when the plan-time look could not reach a node of the deployment (or its look timed out),
   * one line a node: this run leaves the deployment as it is. A property of its own, so that the
   * program can keep every other input at its stored value (ignoreChanges) while this one says why.
   */
  unknown?: string[];
  outcome?: DeploymentOutcome;
  __provider?: string;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

/** The form the provider works with. */
export interface EngineProps extends RunSettings {
  deployment: string;
  bundle: DeploymentBundle;
  drift: string[];
  secrets: Record<string, string>;
  connection: ConnectionSettings;
  unknown?: string[];
  outcome?: DeploymentOutcome;
  __provider?: string;
  /** Stored outputs of an older state version: the words of their upgrade (the state is rewritten). */
  upgrade?: string;
}

/** What Pulumi passes as olds: nothing yet (`{}` on a create), or stored outputs of any state version. */
export type StoredWire = object;

/** The olds as the provider works with them; empty when there are none. */
export function oldsFromWire(w: StoredWire | undefined): Partial<EngineProps> {
  return w === undefined || Object.keys(w).length === 0 ? {} : fromStored(w);
}

/** Stored outputs of any state version, in the form the provider works with. */
export function fromStored(w: StoredWire): EngineProps {
  const u: Upgraded<"EngineDeployment"> = upgrade("EngineDeployment", w);
  const props = fromWire(u.state);
  return stale(u) ? { ...props, upgrade: upgradeWords("EngineDeployment", u) } : props;
}

/** The current stored form (the new inputs, or upgraded outputs) as the provider works with it. */
export function fromWire(w: EngineWire): EngineProps {
  const { __bundle, __run, plan: _plan, stateVersion: _v, ...rest } = w;
  return { ...rest, ...__run, bundle: unpack<DeploymentBundle>(__bundle) };
}
