/**
 * What a node's Docker Engine recorded of a container: its start time (config.v2.json
 * State.StartedAt) and its json-file log, each line stamped by dockerd as it arrives. From them:
 * when the fake engine became ready ("Application startup complete." / "Headless worker ready")
 * and when the first `GET /v1/models` answered 200 (sm121's readiness probe noticing it).
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { engineDirs } from "../../test/site/dockerd";
import { nodeEngineDir } from "../../test/site/node";
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

/** What dockerd keeps of a container in <data root>/containers/<id>/config.v2.json (the fields used here). */
interface ContainerFile {
  Name?: string;
  Created?: string;
  LogPath?: string;
  State?: { StartedAt?: string };
}

/** The newest container of this name on the node. */
function findContainer(node: SimNode, name: string): ContainerFile | undefined {
  const dir = join(engineDirs(nodeEngineDir(node)).data, "containers");
  if (!existsSync(dir)) return undefined;
  let best: ContainerFile | undefined;
  for (const id of readdirSync(dir)) {
    let c: ContainerFile;
    try {
      c = JSON.parse(readFileSync(join(dir, id, "config.v2.json"), "utf8")) as ContainerFile;
    } catch {
      continue; // being written
    }
    if (c.Name !== `/${name}`) continue;
    if (best === undefined || (c.Created ?? "") > (best.Created ?? "")) best = c;
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
  if (c?.State?.StartedAt === undefined) return undefined;
  const log = entries(c.LogPath ?? "");
  const ready = log.find((e) => READY.test(e.log));
  const probe = log.find((e) => MODELS_200.test(e.log));
  return {
    node: node.name,
    container,
    startedAt: parseNano(c.State.StartedAt),
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
