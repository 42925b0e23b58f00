/**
 * The properties of an EngineDeployment as Pulumi stores and shows them, and as the provider works
 * with them. Shown (and diffed by `pulumi preview --diff`): the deployment's name, its plan (one
 * fact a line, render/plan), the drift found on its nodes, its secrets and connection (each
 * `[secret]`). Carried but never shown: `__bundle`, the whole rendered bundle packed, and `__run`,
 * this run's allowances, preflight findings and gateway file.
 *
 * A stack written before (the bundle as a nested `bundle` object beside `allow`, `findings`,
 * `gateway`, `preflight`) is read as well; its first diff asks for one update that rewrites the
 * state in this form and restarts nothing (engineDecide).
 */
import type { DeploymentBundle } from "../render/types";
import type { ReplicaPlace } from "../render/replicas";
import type { DeploymentOutcome } from "../serve/outcome";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./settings";
import { unpack } from "./packed";
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
  /** false for a state written in the nested form of earlier releases. */
  compact: boolean;
}

/** The nested form of earlier releases, as their state holds it. */
export interface LegacyWire extends Partial<RunSettings> {
  deployment?: string;
  bundle: DeploymentBundle;
  drift?: string[];
  secrets?: Record<string, string>;
  connection: ConnectionSettings;
  outcome?: DeploymentOutcome;
  __provider?: string;
}

const NO_FINDINGS: Findings = { fatal: [], warnings: [] };

/** What Pulumi passes as olds: nothing yet (`{}` on a create), this form, or an earlier release's. */
export type StoredWire = EngineWire | LegacyWire | Record<string, never>;

export function isStored(w: StoredWire | undefined): w is EngineWire | LegacyWire {
  return w !== undefined && (("__bundle" in w && typeof w.__bundle === "string") || ("bundle" in w && typeof w.bundle === "object" && w.bundle !== null));
}

/** The olds as the provider works with them; empty when there are none. */
export function oldsFromWire(w: StoredWire | undefined): Partial<EngineProps> {
  return isStored(w) ? fromWire(w) : {};
}

export function fromWire(w: EngineWire | LegacyWire): EngineProps {
  if ("__bundle" in w) {
    const { __bundle, __run, plan: _plan, ...rest } = w;
    return { ...rest, ...__run, bundle: unpack<DeploymentBundle>(__bundle), compact: true };
  }
  const l = w;
  return {
    deployment: l.deployment ?? l.bundle.deployment,
    bundle: l.bundle,
    drift: l.drift ?? [],
    secrets: l.secrets ?? {},
    connection: l.connection,
    allow: l.allow ?? { protected: [], experimental: false, restart: false },
    preflight: l.preflight ?? false,
    findings: l.findings ?? NO_FINDINGS,
    ...(l.gateway !== undefined && { gateway: l.gateway }),
    ...(l.outcome !== undefined && { outcome: l.outcome }),
    ...(l.__provider !== undefined && { __provider: l.__provider }),
    compact: false,
  };
}
