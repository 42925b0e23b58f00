/**
 * The forms in which sm121's dynamic resources store their properties (what Pulumi keeps as their
 * inputs and outputs), at the current state version (./stateVersion). Types only: the resource
 * modules, their implementations and the state versions all read them, and import none of each
 * other for them.
 */
import type { GatewayFormat } from "../recipe/types";
import type { Msg } from "../text/messages";
import type { GatewayModel } from "../gateway/file.render";
import type { Drain } from "../render/replicas";
import type { ReplicaPlace } from "../render/replicas";
import type { NodeConn } from "../render/types";
import type { ProvisionSettings } from "../dgpp/provision.serve";
import type { ImageNode } from "../serve/imagesync";
import type { CacheNode } from "../serve/modelcache";
import type { StoredOutcome } from "../serve/outcome";
import type { GateState } from "../serve/gatejudge";
import type { Owner } from "../serve/owner";
import type { FileLook } from "../serve/sitefile";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./settings";

// EngineDeployment (./engineWire has the form the provider works with).
/** The plan-time look's preflight findings: messages (src/text/messages), said where they are printed. */
export interface Findings {
  fatal: Msg[];
  warnings: Msg[];
  notes?: Msg[];
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
  health?: Msg[];
  /** sm121:liveness's bound on those restarts. */
  liveness?: { maxRestarts: number; windowS: number };
  /** Its place in its replica set's roll (render/replicas). */
  replica?: ReplicaPlace;
  /**
   * What the plan-time look found on the nodes (serve/observe), as messages: what the provider
   * decides on. The shown `drift` is their English words (state version 5).
   */
  drift?: Msg[];
}

/** The stored and shown form. */
export interface EngineWire {
  deployment: string;
  plan: string;
  /**
   * What the plan-time look found on the nodes, in English words: what `pulumi preview --diff`
   * shows, the same bytes for every operator (the messages themselves are `__run.drift`).
   */
  drift: string[];
  secrets: Record<string, string>;
  connection: ConnectionSettings;
  __bundle: string;
  __run: RunSettings;
  /**
   * Set when the plan-time look could not reach a node of the deployment (or its look timed out),
   * one message a node: this run leaves the deployment as it is. A property of its own, so that the
   * program can keep every other input at its stored value (ignoreChanges) while this one says why.
   */
  unknown?: Msg[];
  outcome?: StoredOutcome;
  /** The gate's baseline and its last run (an output, state version 6; serve/gatejudge). */
  gate?: GateState;
  __provider?: string;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

// GatewayFragment.
/** What the provider needs besides the shown properties. */
export interface GatewayFile {
  /** The deployments as served; with the lingering ones added, what the file lists. */
  models: GatewayModel[];
  apiKey: boolean;
  lingering: string[];
  found?: string;
  /** Per deployment, its status and each node's start: a new start rewrites the file. */
  served: string[];
  conn?: NodeConn;
}

/** The stored and shown form. */
export interface GatewayWire {
  path: string;
  format: GatewayFormat;
  /** The node it is written on; none: the machine that runs Pulumi. */
  node?: string;
  endpoints: string;
  connection: ConnectionSettings;
  __file: GatewayFile;
  sha256?: string;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

// ScrapeTargets.
/** What the provider needs besides the shown properties. */
export interface ScrapeFileWire {
  content: string;
  /** Messages (src/text/messages), said where they are printed. */
  warnings: Msg[];
  found: FileLook;
  conn?: NodeConn;
}

/** The stored and shown form. */
export interface ScrapeTargetsWire {
  path: string;
  /** The node it is written on; none: the machine that runs Pulumi. */
  node?: string;
  targets: string;
  connection: ConnectionSettings;
  __file: ScrapeFileWire;
  sha256?: string;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

// ModelCache.
/** The stored form. */
export interface ModelCacheWire {
  deployment: string;
  repo: string;
  revision: string;
  nodes: CacheNode[];
  protectedNodes: string[];
  onDelete: "keep" | "remove";
  connection: ConnectionSettings;
  hfToken?: string;
  commit?: string;
  files?: number;
  bytes?: number;
  source?: string;
  /** What the last read found missing, per node. */
  incomplete?: Record<string, string[]>;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

// ImageSync.
/** The stored form. */
export interface ImageSyncWire {
  deployment: string;
  image: string;
  nodes: ImageNode[];
  connection: ConnectionSettings;
  imageId?: string;
  /** Each node's image ID as last seen (undefined: absent). */
  ids?: Record<string, string | null>;
  source?: string;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}

// DgppProvision (the bundle packed under `__bundle`).
/** The stored and shown form. */
export interface DgppWire extends ProvisionSettings {
  connection: ConnectionSettings;
  /** The staged files, one line each (the plan); the bundle itself is packed under `__bundle`. */
  staged: string[];
  __bundle: string;
  /** The rev the marker on rank 0 says (set by create, update and read). */
  marker?: string;
  stateVersion?: number;
}

// Surge (./surge).
export type SurgePhase = "start" | "end";

/** What `start` did in this up, for `end`. */
export interface SurgeStarted {
  started: boolean;
}

/** What the provider needs besides the shown properties. */
export interface SurgeRun {
  gateway?: GatewaySettings;
  /** The surge's entry in the gateway file. */
  model: GatewayModel;
  apiKey: boolean;
  owner?: Owner;
  keepBackups?: number;
  drain?: Drain;
}

/** The stored and shown form. */
export interface SurgeWire {
  phase: SurgePhase;
  deployment: string;
  nodes: string[];
  /** Whether the plan lets it surge, and why not. */
  go: boolean;
  why: string;
  /** The set's bundle identities, by deployment: a change rolls the set (not shown: the replicas' plans say it). */
  __set: Record<string, string>;
  secrets: Record<string, string>;
  connection: ConnectionSettings;
  __bundle: string;
  __run: SurgeRun;
  /** `end` only: what `start` did in this up. */
  start?: SurgeStarted;
  /** `start` only, an output: what it did. */
  started?: SurgeStarted;
  /** ./stateVersion; set by ShimResource. */
  stateVersion?: number;
}
