/** A rendered deployment: everything a node needs, decided at plan time. */
import type { DeployTarget, EngineName, RollbackMode } from "../recipe/types";
import type { RecipeGate } from "../recipe/gate";
import type { LaunchShape } from "../engines/driver";
import type { BundleFile, ContainerAccess, TargetScripts } from "../targets/types";

export interface NodeConn {
  kind: "local" | "ssh";
  host: string;
  port: number;
  user: string;
}

export interface ApiEndpoint {
  host: string;
  port: number;
  url: string;
}

/** A read-only check of the preflight step. */
export interface PreflightCheck {
  kind: "dir" | "file" | "image" | "command" | "hf-cache" | "port-free" | "roce";
  /** Node path, image reference, command name or port. */
  subject: string;
  why: string;
  /** A failed fatal check stops the up before any change; others are warnings. */
  fatal: boolean;
  /**
   * Also checked by the plan-time look of every preview and up (not only with sm121:preflight):
   * what the engine itself would refuse at start, so the plan refuses it before anything stops.
   */
  atPlan?: boolean;
  /** "hf-cache": the model (a hub repo id) and the revision that must be complete in the cache. */
  model?: { repo: string; revision: string };
  /**
   * "file": the source of a bind mount of the engine's container. The look watches it: a change
   * after the engine started is drift (seed 001's newer-mount rule).
   */
  mountSource?: true;
}

export interface RenderedFile extends BundleFile {
  sha256: string;
}

/** A node of a deployment: its target's scripts (start, stop, status, logs, launch), and what it writes and checks. */
export interface NodeBundle extends Omit<TargetScripts, "files"> {
  node: string;
  rank: number;
  ip: string;
  protected: boolean;
  conn: NodeConn;
  runs: boolean;
  /** The container image, when the target runs one (docker); the plan shows it. */
  image?: string;
  argv: string[];
  env: Record<string, string>;
  stateDir: string;
  files: RenderedFile[];
  mkdirs: string[];
  preflight: PreflightCheck[];
  memGateGiB: number;
  /** Where this node answers the OpenAI API, when it does. */
  api?: ApiEndpoint;
  /** Script recipes: the rendered .env key map, for the plan's key diff. */
  envKeys?: Record<string, string>;
  /** The node's fabric, one fact a line: interface, RDMA ports, the container's access flags. */
  fabric?: string[];
  /** Other deployments the site puts on this node: they share it, and serving this one leaves them running. */
  neighbors?: string[];
  /**
   * A docker container's launch fields beyond argv, env and image (render/launch); null for the
   * other targets. Absent in a bundle an older release stored.
   */
  container?: ContainerLaunch | null;
  identity: string;
}

/** What a docker container is started with besides argv, env and image. */
export interface ContainerLaunch {
  mounts: string[];
  access?: ContainerAccess;
  /** The engine's API key file and where the container sees it (mounted read-only). */
  keyFile?: { path: string; seenAs: string };
}

export interface Readiness {
  /** The whole wait: the recipe's timeout plus the site's grace. */
  timeoutS: number;
  /** The part of timeoutS that is sm121:readyGraceS (what the wait line names). */
  graceS?: number;
  servedName?: string;
  maxModelLen?: number;
  proofs: string[];
  kvCachePattern?: string;
}

/** The link test of a deployment across nodes (fabric/linktest.render.ts): one script a node, by rank. */
export interface LinkTestPlan {
  /** Every node declares RDMA: NCCL on sockets fails the test. */
  rdma: boolean;
  /** sm121:fabric.minBusBandwidthGBps: the busbw at the largest size must reach it. */
  minBusBandwidthGBps?: number;
  /** How long a rank waits for its peers. */
  timeoutS: number;
  /** sm121's torch script, one a rank (fabric/allreduce.render.ts): the test where the image has no nccl-tests. */
  scripts: string[];
  /** A docker deployment: nccl-tests' all_reduce_perf under mpirun, where its image has them. */
  mpi?: LinkTestMpi;
}

/** The nccl-tests run of the link test (fabric/linkmpi.render.ts). */
export interface LinkTestMpi {
  /** Run on rank 0's node: what the image has (`linkTool` records, protocol/). */
  probe: string;
  /** Per rank: its container, sleeping until mpirun's agent comes. */
  start: string[];
  /** On rank 0's node: mpirun in rank 0's container (the tool's path in TOOL_SLOT). */
  run: string;
  /** Per rank: removes its container. */
  stop: string[];
  /** The forced command of the test's key on the peers: into the node's link-test container. */
  receiver: string;
  /** Rank 0's link-test directory: the agent, its key and known_hosts go there. */
  agentDir: string;
}

export interface DeploymentBundle {
  deployment: string;
  recipe: string;
  recipeFile: string;
  engine: EngineName;
  deploy: DeployTarget;
  shape: LaunchShape;
  profile?: string;
  profileStatus?: "stable" | "experimental";
  runnable: boolean;
  overlay?: string;
  nodes: NodeBundle[];
  readiness: Readiness;
  memTimeoutS: number;
  rollback: RollbackMode;
  hooks: { beforeServe: string[]; afterStop: string[] };
  clientNotes: string[];
  warnings: string[];
  /** The option table the recipe's args were checked against (vLLM, SGLang), as the plan says it. */
  optionsChecked?: string;
  /** sm121:fabricCheck on a deployment across nodes: `pulumi up` runs the link test before a start. */
  linkTest?: LinkTestPlan;
  /** The recipe's `[gate]`: the load an up runs against the first replica it restarts (serve/gate). */
  gate?: RecipeGate;
  identity: string;
}
