/**
 * What the docker shim recorded on a node: a container's start time (state.json StartedAt) and
 * its json-file log, each line stamped by the supervisor as it arrives. From them: when the
 * fake engine became ready ("Application startup complete." / "Headless worker ready") and when
 * the first `GET /v1/models` answered 200 (sm121's readiness probe noticing it).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import type { SimNode } from "../../test/site/site";

interface LogEntry {
  log: string;
  stream: string;
  time: string;
}

export interface EngineTimes {
  node: string;
  container: string;
  /** ms since the epoch */
  startedAt: number;
  readyAt?: number;
  firstModels200?: number;
}

/** RFC 3339 with nanoseconds, to ms since the epoch (sub-ms kept as a fraction). */
export function parseNano(s: string): number {
  const m = /^(.*T\d\d:\d\d:\d\d)\.(\d+)Z$/.exec(s);
  if (m === null) return Date.parse(s);
  const frac = `${m[2] ?? ""}000000000`.slice(0, 9);
  return Date.parse(`${m[1] ?? ""}Z`) + Number(frac) / 1e6;
}

function readJson(file: string): unknown {
  try {
    return JSON.parse(readFileSync(file, "utf8")) as unknown;
  } catch {
    return undefined;
  }
}

interface ContainerFiles {
  config: { Name?: string; Created?: string; Sim?: { log?: string } };
  state: { StartedAt?: string };
}

/** The newest container of this name on the node. */
function findContainer(node: SimNode, name: string): ContainerFiles | undefined {
  const dir = join(node.root, "var", "docker", "containers");
  if (!existsSync(dir)) return undefined;
  let best: ContainerFiles | undefined;
  for (const id of readdirSync(dir)) {
    const config = readJson(join(dir, id, "config.json")) as ContainerFiles["config"] | undefined;
    if (config?.Name !== `/${name}`) continue;
    const state = (readJson(join(dir, id, "state.json")) ?? {}) as ContainerFiles["state"];
    if (best === undefined || (config.Created ?? "") > (best.config.Created ?? "")) best = { config, state };
  }
  return best;
}

function entries(file: string): LogEntry[] {
  if (!existsSync(file)) return [];
  const out: LogEntry[] = [];
  for (const l of readFileSync(file, "utf8").split("\n")) {
    if (l === "") continue;
    try {
      out.push(JSON.parse(l) as LogEntry);
    } catch {
      // a line still being written
    }
  }
  return out;
}

const READY = /Application startup complete\.|Headless worker ready|The server is fired up and ready to roll/;
const MODELS_200 = /"GET \/v1\/models HTTP\/1\.1" 200/;

export function engineTimes(node: SimNode, container: string): EngineTimes | undefined {
  const c = findContainer(node, container);
  if (c === undefined || c.state.StartedAt === undefined) return undefined;
  const log = entries(c.config.Sim?.log ?? "");
  const ready = log.find((e) => READY.test(e.log));
  const probe = log.find((e) => MODELS_200.test(e.log));
  return {
    node: node.name,
    container,
    startedAt: parseNano(c.state.StartedAt),
    ...(ready !== undefined && { readyAt: parseNano(ready.time) }),
    ...(probe !== undefined && { firstModels200: parseNano(probe.time) }),
  };
}

/** A deployment's engine start: first container start to the API rank's ready line. */
export interface DeploymentEngine {
  /** ms from the earliest container start to rank 0 ready */
  engineStartMs: number;
  /** ms from rank 0 ready to the first 200 of /v1/models (sm121 noticing) */
  noticedAfterMs?: number;
  /** the earliest container start, ms since the epoch */
  firstStart: number;
  /** rank 0 ready, ms since the epoch */
  readyAt: number;
  nodes: EngineTimes[];
}

export function deploymentEngine(nodes: readonly SimNode[], deployment: string): DeploymentEngine {
  const times = nodes.map((n, rank) => {
    const t = engineTimes(n, `sm121-${deployment}-${rank}`);
    if (t === undefined) throw new Error(`no container sm121-${deployment}-${rank} on ${n.name}`);
    return t;
  });
  const api = times[0];
  if (api?.readyAt === undefined) throw new Error(`${deployment}: rank 0 never logged a ready line`);
  const firstStart = Math.min(...times.map((t) => t.startedAt));
  return {
    engineStartMs: api.readyAt - firstStart,
    ...(api.firstModels200 !== undefined && { noticedAfterMs: api.firstModels200 - api.readyAt }),
    firstStart,
    readyAt: api.readyAt,
    nodes: times,
  };
}
