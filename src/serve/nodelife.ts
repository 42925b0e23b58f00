/**
 * What happened to a deployment on a node between runs, as the node itself keeps it in the
 * deployment's state directory, read by the plan-time look and `sm121 status` (one `life` record,
 * from the probe's own script):
 *
 * - `boot-id`: the node's boot id (/proc/sys/kernel/random/boot_id) when the last up found the
 *   engine ready there; another boot id now means the node rebooted since.
 * - `ready-at`: when the last up found the engine ready (a load that was ready once is no load:
 *   ./loading).
 * - `tripwire.json`: the memory tripwire stopped the engine (targets/tripwire): when, and with
 *   how much MemAvailable against which floor.
 * - `keeper.json`, `keeper-gave-up.json` (rank 0): what `sm121 keep` did and the repairs that
 *   failed (cli/keep), and that it gave up; a successful up removes the second.
 *
 * Reading costs no process where the files are absent (bash's `read`); the files sm121 or a tool
 * wrote go through base64, and are parsed here with a schema: a file that does not parse is none.
 */
import type { ZodType } from "zod";
import type { NodeBundle } from "../render/types";
import { firstRecord, printRecord, type NodeRecord, type RecordOf } from "../protocol";
import type { Msg } from "../text/messages";
import { nodePath } from "../text/shell";
import { TRIPWIRE_FILES } from "../targets/tripwire";
import { tripwireStart } from "../targets/tripwire";

/** The files of a deployment's state directory that say what happened to it between runs. */
export const LIFE_FILES = {
  bootId: "boot-id",
  readyAt: "ready-at",
  keeper: "keeper.json",
  gaveUp: "keeper-gave-up.json",
} as const;

/** The tripwire's record of a stop (targets/tripwire). */
export interface TripwireStop {
  at: string;
  stoppedMs: number;
  memAvailableKiB: number;
  floorKiB: number;
}

/** One repair of `sm121 keep` that failed, or a stop by the tripwire it counted as one. */
export interface KeeperFailure {
  at: string;
  cause: Msg;
}

/** One action of `sm121 keep` on a deployment, as `sm121 status` shows the last one. */
export interface KeeperAction {
  at: string;
  /** repaired | failed | gave-up | left */
  action: "repaired" | "failed" | "gave-up" | "left";
  why: Msg[];
  /** Seconds from the look that found it to the engine serving again (a repair). */
  servingAfterS?: number;
  error?: Msg;
}

/** keeper.json: the failures within the keeper's window, and its last action. */
export interface KeeperRecord {
  failures: KeeperFailure[];
  last?: KeeperAction;
}

/** keeper-gave-up.json. */
export interface GaveUp {
  at: string;
  count: number;
  windowS: number;
  error: Msg;
}

export interface NodeLife {
  /** The node's boot id now. */
  boot: string;
  /** Its boot id when the last up found the engine ready (none: no up recorded one). */
  bootAtUp?: string;
  readyAt?: string;
  tripwire?: TripwireStop;
  keeper?: KeeperRecord;
  gaveUp?: GaveUp;
}

/** The `life` record of a deployment on a node (a part of the probe's script: serve/steps). */
export function lifeScript(nb: Pick<NodeBundle, "stateDir">): string {
  const d = nodePath(nb.stateDir);
  const b64 = (v: string, file: string) => `${v}=; if [ -f ${d}/${file} ]; then ${v}=$(base64 -w0 < ${d}/${file}); fi`;
  return [
    "lb=; lu=; lr=; read -r lb < /proc/sys/kernel/random/boot_id || true",
    `if [ -f ${d}/${LIFE_FILES.bootId} ]; then read -r lu < ${d}/${LIFE_FILES.bootId} || true; fi`,
    `if [ -f ${d}/${LIFE_FILES.readyAt} ]; then read -r lr < ${d}/${LIFE_FILES.readyAt} || true; fi`,
    b64("lt", TRIPWIRE_FILES.record),
    b64("lk", LIFE_FILES.keeper),
    b64("lg", LIFE_FILES.gaveUp),
    printRecord(
      "life",
      '"boot":"%s","bootAtUp":"%s","readyAt":"%s","tripwire64":"%s","keeper64":"%s","gaveUp64":"%s"',
      '"${lb//[^0-9a-f-]/}" "${lu//[^0-9a-f-]/}" "${lr//[^0-9A-Z:.-]/}" "$lt" "$lk" "$lg"',
    ),
  ].join("\n");
}

/**
 * What the serve writes once the engine is ready on a node: the boot id and the time (then the
 * `life` record, whose boot id the state keeps), the tripwire started where none runs (an engine
 * an older sm121 started, which this up only checks), and the keeper's give-up gone: an up served it.
 */
export function readyScript(nb: Pick<NodeBundle, "stateDir" | "runs">): string {
  const d = nodePath(nb.stateDir);
  return [
    `mkdir -p ${d}`,
    `{ read -r lb < /proc/sys/kernel/random/boot_id && printf '%s\\n' "$lb" > ${d}/${LIFE_FILES.bootId}; } || true`,
    `TZ=UTC printf '%(%Y-%m-%dT%H:%M:%SZ)T\\n' -1 > ${d}/${LIFE_FILES.readyAt}`,
    `rm -f ${d}/${LIFE_FILES.gaveUp}`,
    ...(nb.runs ? [tripwireStart(nb.stateDir, true)] : []),
    lifeScript(nb),
  ].join("\n");
}

const text = (s: string) => Buffer.from(s, "base64").toString("utf8");

/** A JSON file's content through its schema; undefined when it is absent or does not parse. */
function parsed<T>(b64: string, schema: { safeParse(v: unknown): { success: true; data: T } | { success: false } }) {
  if (b64 === "") return undefined;
  try {
    const r = schema.safeParse(JSON.parse(text(b64)));
    return r.success ? r.data : undefined;
  } catch {
    return undefined;
  }
}

/** The files' schemas, built when a record is first read (no zod at module scope: DESIGN). */
function schemas() {
  const { z } = require("zod") as typeof import("zod");
  // A message as sm121 wrote it: its key, and its arguments (a message among them).
  const msgSchema: ZodType<Msg> = z.lazy(() =>
    z.object({
      key: z.string(),
      args: z.record(z.string(), z.union([z.string(), z.number(), msgSchema])).optional(),
    }),
  ) as ZodType<Msg>;
  const failure = z.object({ at: z.string(), cause: msgSchema });
  return {
    tripwire: z.object({
      at: z.string(),
      stoppedMs: z.number(),
      memAvailableKiB: z.number(),
      floorKiB: z.number(),
    }),
    keeper: z.object({
      failures: z.array(failure),
      last: z
        .object({
          at: z.string(),
          action: z.enum(["repaired", "failed", "gave-up", "left"]),
          why: z.array(msgSchema),
          servingAfterS: z.number().optional(),
          error: msgSchema.optional(),
        })
        .optional(),
    }),
    gaveUp: z.object({ at: z.string(), count: z.number(), windowS: z.number(), error: msgSchema }),
  };
}

let built: ReturnType<typeof schemas> | undefined;

/** The node's life from its record. */
export function lifeOf(r: RecordOf<"life">): NodeLife {
  const s = (built ??= schemas());
  const tripwire = parsed(r.tripwire64, s.tripwire);
  const keeper: KeeperRecord | undefined = parsed(r.keeper64, s.keeper);
  const gaveUp: GaveUp | undefined = parsed(r.gaveUp64, s.gaveUp);
  return {
    boot: r.boot,
    ...(r.bootAtUp !== "" && { bootAtUp: r.bootAtUp }),
    ...(r.readyAt !== "" && { readyAt: r.readyAt }),
    ...(tripwire !== undefined && { tripwire }),
    ...(keeper !== undefined && { keeper }),
    ...(gaveUp !== undefined && { gaveUp }),
  };
}

/** The life in a script's records, if it printed one. */
export function lifeIn(records: readonly NodeRecord[]): NodeLife | undefined {
  const r = firstRecord(records, "life");
  return r === undefined ? undefined : lifeOf(r);
}

/** The node rebooted since the last up found the engine ready there. */
export function rebooted(life: NodeLife | undefined): boolean {
  return life?.bootAtUp !== undefined && life.boot !== "" && life.boot !== life.bootAtUp;
}
