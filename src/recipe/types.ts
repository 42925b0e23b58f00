/** The validated shapes of a recipe and a site: what the rest of sm121 works from. */
import type { NodeFabric, SiteFabric } from "../fabric/site.recipe";
import type { FieldPath, Place, Position } from "./locate";
import type { Msg } from "../text/messages";
import type { RecipeGate } from "./gate";

export const ENGINE_NAMES = ["vllm", "sglang", "gr8", "dgpp"] as const;
export type EngineName = (typeof ENGINE_NAMES)[number];

export const DEPLOY_TARGETS = ["docker", "tmux", "native", "script"] as const;
export type DeployTarget = (typeof DEPLOY_TARGETS)[number];

export type RollbackMode = "off" | "auto";

export interface DgppBlock {
  repo?: string;
  rev?: string;
  /** The DGPP checkout on the nodes; `~/` is expanded to the node's $HOME on the node. */
  dir: string;
  httpPort: number;
  release?: string;
  /** DGPP_ROCE_DEVICES for hosts with more than two RoCE devices (DGPP's transport takes two lanes). */
  roceDevices?: string;
  /** Serialized verbatim into the cluster JSON. */
  engine: Record<string, unknown>;
}

export interface Recipe {
  name: string;
  /** The file it came from, as shown in errors. */
  file: string;
  engine: EngineName;
  /** The engine string as written; differs from `engine` when an unknown engine fell back to vLLM. */
  engineAsWritten: string;
  /** `engine_version`: the version of the engine the image (or the node) runs, when the recipe says it. */
  engineVersion?: string;
  /** The option table `args` were checked against, as the plan says it (vLLM and SGLang). */
  optionsChecked?: string;
  /** The place of a field in the recipe file, to point errors found later (the site's layout) at its line. */
  locate: (path: FieldPath) => Position;
  deploy: DeployTarget;
  model?: string;
  servedModelName?: string;
  image?: string;
  entrypoint?: string[];
  tp: number;
  port?: number;
  args: string[];
  env: Record<string, string>;
  /** Extra bind mounts for container targets, `SRC:DST[:ro|rw]`. */
  mounts: string[];
  hooks: { beforeServe: string[]; afterStop: string[] };
  readiness: { timeoutS: number; maxModelLen?: number; proofs: string[] };
  dgpp?: DgppBlock;
  /** Script recipes: where the profiles are, relative to the recipes directory. */
  profilesDir?: string;
  rollback: RollbackMode;
  /** `[memory]`: the model's size and shape for the memory fit, until the node has its files. */
  memory?: RecipeMemory;
  /** `[gate]`: the load an up runs against the first replica it restarts, and its tolerances (./gate). */
  gate?: RecipeGate;
  /** Said to the operator by `sm121 validate` and `render`; a bundle keeps them in English (state). */
  warnings: Msg[];
}

/** A recipe's `[memory]` block: the checkpoint's size and the config.json fields the KV cache needs. */
export interface RecipeMemory {
  weightsBytes?: number;
  /** config.json's own names and values (a partial config). */
  shape: Partial<
    Record<"num_hidden_layers" | "num_key_value_heads" | "head_dim" | "kv_lora_rank" | "qk_rope_head_dim", number>
  > & { torch_dtype?: string };
  overheadGiB?: number;
}

export const NODE_ENV_KEYS = ["HF_HOME", "BIND", "PORT", "REQUIRE_IDLE_GPU"] as const;
export type NodeEnvKey = (typeof NODE_ENV_KEYS)[number];

export interface NodeRecipe {
  dir: string;
  start: string;
  stop: string;
  container: string;
  dockerArgs?: string;
  vars: Record<string, string>;
  /** Container paths that start.sh mounts itself; a profile or overlay mount there is an error. */
  ownedMounts: string[];
}

/** A node's `ssh` block as written: port and user may be left to `~/.ssh/config` (remote/login). */
export interface WrittenSsh {
  host: string;
  port?: number;
  user?: string;
}

/** Where a written `ssh` block leads (the program and the CLI pass remote/login's; as written otherwise). */
export type SshResolver = (written: WrittenSsh) => { host: string; port: number; user?: string };

export interface SiteNode {
  name: string;
  host: "local" | "ssh";
  /**
   * Where sm121 logs in: the site's `ssh` block as ssh(1) resolves it (remote/login: HostName,
   * User and Port of a matching `~/.ssh/config` entry where the site leaves them out); `alias`:
   * the host as the site writes it, when that entry gave another HostName.
   */
  ssh?: { host: string; port: number; user: string; alias?: string };
  /** Bind and rendezvous address of the node. */
  ip: string;
  protected: boolean;
  env: Partial<Record<NodeEnvKey, string>>;
  vars: Record<string, string>;
  gatewayUrl?: string;
  gpuProbe?: string;
  minMemAvailableGiB?: number;
  /** The memory tripwire's floor on this node (GiB of MemAvailable; 0: no tripwire), over the site's. */
  memFloorGiB?: number;
  /** Seed 001's relief before the tripwire stops the engine, over the site's. */
  memRelief?: MemRelief;
  recipes: Record<string, NodeRecipe>;
  /** Where sm121 keeps its files on the node. */
  stateDir: string;
  /** The node's fabric (control interface, RDMA devices), when the site declares one. */
  fabric?: NodeFabric;
  /** GPUs of the node (a DGX Spark has one GB10). */
  gpus: number;
}

/**
 * What the memory tripwire tries once before it stops an engine (seed 001's MEMWATCH_RELIEF):
 * nothing, or dropping the clean page cache with `sudo -n` and sampling again.
 */
export type MemRelief = "off" | "drop_caches";

/**
 * The memory tripwire beside every engine (targets/tripwire): it samples MemAvailable every
 * `sampleS` and stops the engine on its node before MemAvailable falls below `floorGiB`.
 */
export interface Tripwire {
  floorGiB: number;
  sampleS: number;
  relief: MemRelief;
}

/**
 * The tripwire's default floor, 8 GiB of MemAvailable (docs/operating.md, "When nobody is
 * watching"): above the ~7 GiB at which a GB10 host stopped answering during vLLM's profiling run
 * (vllm#46307), and with room for the fall of about 3 GiB a second measured on a GB10 while an
 * engine initialized (vllm#54200) over one 0.5 s sample and the stop.
 */
export const TRIPWIRE_DEFAULTS: Tripwire = { floorGiB: 8, sampleS: 0.5, relief: "off" };

/**
 * `sm121:keep`: how `sm121 keep` bounds its repairs of a deployment: a wait after each failure
 * (`backoffS`, doubling up to `backoffMaxS`), and after `maxFailures` failed repairs within
 * `windowS` it gives up on it until an operator's up serves it.
 */
export interface KeepSettings {
  maxFailures: number;
  windowS: number;
  backoffS: number;
  backoffMaxS: number;
}

export const KEEP_DEFAULTS: KeepSettings = { maxFailures: 3, windowS: 3600, backoffS: 30, backoffMaxS: 600 };

/** How an up restarts the replicas of a set: one at a time behind the gateway, or all at once. */
export type RollMode = "one" | "all";

export interface Deployment {
  name: string;
  recipe: string;
  profile?: string;
  nodes: string[];
  overlay?: string;
  overlayWins: boolean;
  /** Where the site declares it: its entry, and its node list (a `replicas:` entry's group). */
  at?: { entry: FieldPath; nodes: FieldPath };
  /** The `replicas:` entry it was rendered from (one deployment per node group). */
  replicaOf?: string;
  /** The entry's `roll:` (default one). */
  roll?: RollMode;
}

export type GatewayFormat = "sm121" | "litellm" | "llama-swap";

/**
 * `sm121:liveness`: how the plan-time look tells a hung engine (a one-token completion that gets
 * no token within `timeoutS`) and how often drift may restart a deployment's engine: at most
 * `maxRestarts` within `windowS`, then it is marked failed and left alone until SM121_RESTART=1.
 */
export interface Liveness {
  timeoutS: number;
  maxRestarts: number;
  windowS: number;
}

/**
 * Defaults for a 100 GB model: an idle engine answers a one-token completion in well under a
 * second, a busy one within 10 s (and its counters show progress when it does not); three restarts
 * of a load that takes many minutes within an hour means the engine does not stay up.
 */
export const LIVENESS_DEFAULTS: Liveness = { timeoutS: 10, maxRestarts: 3, windowS: 3600 };

/** A spare group of a replicas: entry, and the deployment a surge starts there. */
export interface Spare {
  /** The entry's name: its replicas are <of>-1, <of>-2, ... */
  of: string;
  nodes: string[];
  /** The deployment a surge serves on the spare: the entry's recipe on the spare's nodes, named <of>-spare. */
  deployment: Deployment & Required<Pick<Deployment, "at">>;
}

export interface Site {
  file: string;
  /** The place of a field of the site, to point errors at their line (see siteSource.ts). */
  locate: (path: FieldPath) => Place;
  stack: string;
  nodes: Record<string, SiteNode>;
  deployments: Deployment[];
  minMemAvailableGiB: number;
  memTimeoutS: number;
  readyGraceS: number;
  recipesDir: string;
  knownHosts: string;
  /** strict: unknown and changed keys refused; accept-new: record unknown keys, refuse changed. */
  hostKeys: "strict" | "accept-new";
  /** Where the gateway backend file goes: a path on the machine that runs Pulumi, or on `node`. */
  gateway?: { path: string; format: GatewayFormat; model?: string; node?: string };
  /** Where the Prometheus file_sd file of the engines' /metrics goes: as `gateway`, here or on `node`. */
  scrapeTargets?: { path: string; node?: string };
  rollback: RollbackMode;
  /** Seconds between polls of a DGPP build (30; tests set less). */
  dgppPollS: number;
  /** A preview also runs the read-only node checks. */
  preflight: boolean;
  /** Seconds an operation waits for a node another operation holds. */
  lockWaitS: number;
  /** Seconds a replica of a roll waits for its requests in flight before it stops (0: no wait). */
  drainS: number;
  /** The spare groups of replicas: entries (recipe/spare). */
  spares: Spare[];
  /** Backups of a file sm121 replaces (a script recipe's .env), kept per file; at least 1. */
  keepBackups: number;
  /**
   * Who runs the recipes' hooks: `engine` (the default: inside the engine's own sequence, no
   * plugin) or `pulumi-command` (`command:remote:Command` resources; needs the command plugin).
   */
  hooks: "engine" | "pulumi-command";
  /** The model's checkpoint on every node of a deployment (ModelCache): off, or on and kept / removed by a delete. */
  modelCache: "off" | "keep" | "remove";
  /** A docker recipe's image with one ID on every node of a deployment (ImageSync). */
  imageSync: boolean;
  /** Every deployment's endpoint must ask for a key: one whose engine takes none (gr8, DGPP) is refused. */
  requireApiKey: boolean;
  /** How containers that span nodes reach the fabric, and the link test's settings. */
  fabric: SiteFabric;
  liveness: Liveness;
  /** The memory tripwire's site-wide settings (a node may set its own floor and relief). */
  tripwire: Tripwire;
  keep: KeepSettings;
}
