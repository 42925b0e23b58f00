/** What a deploy target turns a launch into: files and the exact scripts that run on the node. */
import type { DeployTarget, EngineName } from "../recipe/types";

export interface BundleFile {
  /** Path on the node; `~/` means the node's $HOME. */
  path: string;
  content: string;
  mode: number;
  /** Back the old file up before replacing it (the operator may have edited it). */
  backup: boolean;
}

/** What a container needs of the node's fabric: its RDMA devices, capabilities and limits. */
export interface ContainerAccess {
  privileged: boolean;
  /** `--device` values: `HOST[:CONTAINER]`. */
  devices: string[];
  capAdd: string[];
  /** `--ulimit` values, e.g. `memlock=-1:-1`. */
  ulimits: string[];
}

/** One rank of a deployment, as the target needs it. */
export interface LaunchSpec {
  deployment: string;
  recipe: string;
  engine: EngineName;
  deploy: DeployTarget;
  rank: number;
  nnodes: number;
  /** Does this rank run a process? (Head-coordinated engines: only rank 0.) */
  runs: boolean;
  /** The engine process's argv, entrypoint first. */
  argv: string[];
  env: Record<string, string>;
  image?: string;
  /** `SRC:DST[:ro|rw]`; SRC may start with `~/`. */
  mounts: string[];
  /** sm121's directory for this deployment on the node, e.g. `~/.sm121/deployments/<name>`. */
  stateDir: string;
  /**
   * The engine's API key file (SGLang's --config YAML): `path` on the node, which the start
   * script writes (0600) from secrets.env, and the path as `argv` names it (inside a container:
   * where it is mounted).
   */
  keyFile?: { path: string; seenAs: string };
  /** A container's access to the node's RDMA devices (docker deployments across nodes). */
  access?: ContainerAccess;
}

export interface TargetScripts {
  files: BundleFile[];
  /** Starts the engine detached; returns at once. */
  start: string;
  /** Stops the engine and verifies that it is gone; succeeds when nothing runs. */
  stop: string;
  /** Prints one `status` record (protocol/): running, startedAt ("ISO" or null), detail. */
  status: string;
  /**
   * Whether `status` asks the engine's API (DGPP's does): an HTTP request, which a protected node
   * gets only when allowed.
   */
  statusAsksApi: boolean;
  /** Prints the engine log: $SM121_LINES lines, followed when $SM121_FOLLOW=1. */
  logs: string;
  /** The exact launch command, for the plan and `sm121 render`. */
  launch: string;
  /** The container the engine runs in (docker; a script recipe's start.sh), read by `docker inspect`. */
  containerName?: string;
}
