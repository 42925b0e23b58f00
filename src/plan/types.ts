/**
 * What the plan is: the value planSite (./site) makes from the project, what the plan-time look saw
 * and the run's inputs, and that the components register (src/components). Plain data, no Pulumi
 * object: a unit test compares it, and a component reads it without deciding anything.
 */
import type { NodeFabric } from "../fabric/site.recipe";
import type { Spare } from "../recipe/types";
import type { DgppPaths } from "../dgpp/files.render";
import type { GatewayModel } from "../gateway/file.render";
import type { Fit } from "../render/memfit";
import type { Drain, ReplicaPlace, ReplicaSet } from "../render/replicas";
import type { ScrapeFile } from "../render/scrapeTargets";
import type { SurgeVerdict } from "../render/surge";
import type { DeploymentBundle, NodeConn } from "../render/types";
import type { ImageNode } from "../serve/imagesync";
import type { CacheNode } from "../serve/modelcache";
import type { SiteObservation } from "../serve/observe";
import type { Owner } from "../serve/owner";
import type { FileLook } from "../serve/sitefile";
import type { Msg } from "../text/messages";
import type { Allowances, GatewaySettings } from "../providers/settings";

/** What the plan-time look saw (src/programLook.ts): the input of planSite besides the project and the run. */
export interface SiteLook {
  /** Nodes whose `auto` fabric the look resolved, as the site should now read (serve/fabric). */
  fabric: Record<string, NodeFabric>;
  /** The deployments' nodes, and the nodes no deployment uses (serve/observe). */
  nodes: SiteObservation;
  /** The gateway file and the scrape targets file, where the site keeps them (serve/sitefile). */
  gateway?: FileLook;
  scrape?: FileLook;
}

/** A line the plan says (the program's diagnostics), in the reader's language. */
export interface PlanLine {
  level: "info" | "warn";
  text: string;
}

/** The checkpoint on every node before the engine starts (ModelCache). */
export interface ModelSync {
  repo: string;
  revision: string;
  nodes: CacheNode[];
  protectedNodes: string[];
  onDelete: "keep" | "remove";
}

/** The image, one ID on every node, before the engine starts (ImageSync). */
export interface ImageSyncPlan {
  image: string;
  nodes: ImageNode[];
}

/** A DGPP recipe's provisioning: where DGPP lives on the nodes, and the pin to build (none: pre-installed). */
export interface DgppPlan {
  paths: DgppPaths;
  pollS: number;
  capS: number;
  rev?: string;
  buildScript?: string;
}

/** What the look found for one deployment (serve/observe). */
export interface Found {
  /** What this up repairs or stops first, one message a finding. */
  drift: Msg[];
  /** The part of `drift` that is the engine's health (dead or hung). */
  health: Msg[];
  /** Its nodes the look could not see, one message each: this run leaves it as it is. */
  unknown?: Msg[];
  /** The preflight findings on its nodes. */
  findings: { fatal: Msg[]; warnings: Msg[]; notes?: Msg[] };
}

/** One deployment as this run registers it. */
export interface DeploymentPlan {
  bundle: DeploymentBundle;
  /** The deployments it comes after (one serve at a time holds a node; protected and unknown ones last). */
  after: string[];
  /** Its place in its replica set's roll. */
  replica?: ReplicaPlace;
  found: Found;
  model?: ModelSync;
  image?: ImageSyncPlan;
  dgpp?: DgppPlan;
}

/** A set with a spare group, and what the plan decided for it (render/surge). */
export interface SurgePlan {
  set: ReplicaSet;
  spare: Spare;
  bundle: DeploymentBundle;
  verdict: SurgeVerdict;
  /** The memory fit of the new recipe on the spare. */
  fit: Fit;
  /** The plan's line. */
  words: string;
  /** The surge's entry in the gateway file. */
  model: GatewayModel;
  /** How the surge's own engine drains before it stops. */
  drain?: Drain;
  /** The set's bundle identities, by deployment: what `start` and `end` compare between ups. */
  identities: Record<string, string>;
}

/** The gateway file: where it goes, and the deployments it lists as declared. */
export interface GatewayPlan {
  settings: GatewaySettings;
  /** sm121:gateway's one model name for every deployment, when it sets one. */
  model?: string;
  /** In the site's order. */
  models: GatewayModel[];
  /** Deployments the site no longer declares that a node still holds: kept in the file, disabled. */
  lingering: string[];
  /** Its sha256 as the look found it ("": no file); none: the look could not see it. */
  found?: string;
}

/** The scrape targets file of the deployments this run serves. */
export interface ScrapePlan {
  path: string;
  node?: { name: string; conn: NodeConn };
  file: ScrapeFile;
  found: FileLook;
}

/** What every resource of this run gets besides its own part of the plan. */
export interface RunWiring {
  allow: Allowances;
  /** `sm121:preflight: true` on a preview: the resources' check reports the look's preflight findings. */
  preflight: boolean;
  owner: Owner;
  keepBackups: number;
  liveness: { maxRestarts: number; windowS: number };
  /** sm121:apiKey is set. */
  apiKey: boolean;
  gateway?: GatewaySettings;
  /** `sm121:hooks: pulumi-command`: the hooks run as Commands; `knownHosts` pins each node's host key. */
  hookCommands?: { knownHosts: string };
}

export interface SitePlan {
  /** In the order they register: each after the ones it names. */
  deployments: DeploymentPlan[];
  /** The deployments' names in the site's order: the stack's outputs. */
  served: string[];
  surges: SurgePlan[];
  run: RunWiring;
  gateway?: GatewayPlan;
  scrape?: ScrapePlan;
  /**
   * The deployments the look could not see, each with why and what to run: a preview says them
   * and passes; an up fails with them once every other deployment has gone on.
   */
  unknown: string[];
}

/**
 * The plan, or why the run is refused (one message, a line per refusal); with what the plan says,
 * in the order it says it (a refusal's lines are what it said before it refused).
 */
export type Planned = { plan: SitePlan; lines: PlanLine[] } | { refused: string; lines: PlanLine[] };
