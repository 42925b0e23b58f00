/**
 * The records node scripts print, `@sm121 {"kind":"<kind>",...}`: one zod schema per kind. The
 * schemas are built inside a function (DESIGN: no zod schema at module scope of code a dynamic
 * provider loads), once per process, on the first record parsed; zod itself is loaded then too,
 * so the writers (which need only the kinds) do not load it.
 */
import type { z } from "zod";

/** Every kind's fields (`kind` aside). Each writer names its kind with `printRecord`. */
function fieldsOfEachKind() {
  const { z } = require("zod") as typeof import("zod");
  const int = () => z.number().int();
  /** A number a node read from a file or a tool; `null` when it had none. */
  const count = () => z.number().nullable();
  /** A file's content on the node, as sm121 wrote it (JSON); the reader checks its fields. */
  const fileJson = () => z.looseObject({});
  return {
    // The target's status script (targets/common STATUS_RECORD).
    status: { running: z.boolean(), startedAt: z.string().nullable(), detail: z.string().optional() },
    // Readiness (serve/readiness): the /v1/models body (base64), the first token, the log's facts.
    models: { body64: z.string() },
    firstToken: { readyMs: int(), ttftMs: int() },
    kvCacheLine: { line64: z.string() },
    proof: { index: int().nonnegative(), found: z.boolean() },
    // Where the time to ready went (serve/phases): the engine log's phase lines (base64), the copies
    // before the start, the node's copy of the last split; the image a container runs (serve/digest).
    readyPhases: { lines64: z.string() },
    copied: { what: z.enum(["image", "model"]), ms: int().nonnegative() },
    lastReady: { json64: z.string() },
    runningImage: { id: z.string(), digests64: z.string() },
    launcherRunning: {},
    // The look and preflight (serve/steps): failed checks and the node's state.
    check: { check: z.string(), subject: z.string(), why: z.string(), fatal: z.boolean() },
    hfCache: {
      check: z.object({
        check: z.string(),
        subject: z.string(),
        why: z.string(),
        fatal: z.boolean(),
        model: z.object({ repo: z.string(), revision: z.string() }).optional(),
      }),
      listing64: z.string(),
    },
    state: { state: fileJson().nullable() },
    stopFailed: { stopFailed: fileJson() },
    watched: { file: z.string(), sha256: z.string(), ctime: int() },
    mount: { path64: z.string(), ctime: int() },
    // A container's image and the one its reference names now (targets/common containerStatus).
    imageIds: { runs: z.string(), tag: z.string() },
    clients: { clients: int().nonnegative() },
    // The node's .env without its secret lines (base64), for the plan's key diff.
    envText: { text64: z.string() },
    memGate: { memAvailableKiB: int() },
    written: { file: z.string(), written: z.boolean(), backup: z.string().nullable(), sha256: z.string() },
    took: { step: z.string(), ms: int() },
    // The plan-time look at a node, one script for all of it (serve/observe): where each of its
    // parts begins (its records follow), and an image whose ID it compares between nodes, as
    // docker lists it (targets/dockerlook: `<id> <repo tags and digests>`, base64).
    lookPart: { index: int().nonnegative() },
    lookImage: { line64: z.string() },
    // The deployments a node holds (serve/registry).
    other: { deployment: z.string() },
    holder: { deployment: z.string(), held: z.boolean() },
    holderOwner: { deployment: z.string(), owner: fileJson().nullable() },
    displaced: { deployment: z.string(), by: fileJson().optional() },
    // The liveness check (serve/probe) and the model facts (serve/modelprobe).
    // Its /metrics before and after: the lines that name the counters, base64 (null: no answer).
    live: {
      modelsCode: int(),
      completionCode: int().optional(),
      ms: int().optional(),
      before64: z.string().nullable().optional(),
      after64: z.string().nullable().optional(),
    },
    // What happened to a deployment on a node between runs (serve/nodelife): the boot id now and
    // at the last up, when that up found it ready, and sm121's files of it (base64; "" when none).
    life: {
      boot: z.string(),
      bootAtUp: z.string(),
      readyAt: z.string(),
      tripwire64: z.string(),
      keeper64: z.string(),
      gaveUp64: z.string(),
    },
    // Liveness without a request on a protected node (serve/passive): the engine's processes'
    // states, one letter each, and the seconds since its log was written (null: no log).
    passive: { states: z.string(), logAgeS: count() },
    memTotal: { bytes: count() },
    modelConfig: { config64: z.string(), weightsBytes: count() },
    // The same read from the hub through one node, where no HF cache had the checkpoint (serve/modelprobe).
    modelHub: { config64: z.string(), weightsBytes: count() },
    // A file sm121 keeps on a node (serve/sitefile): its content (null: none), a backup kept of it.
    placedFile: { content64: z.string().nullable() },
    placedKept: {},
    // A docker image on a node (serve/imagesync): its ID and size, or none.
    image: { id: z.string(), size: int().nonnegative() },
    imageAbsent: {},
    // A DGPP build on rank 0 (dgpp/provision.serve): done, still running, or its session gone without the
    // build's last line; and the build log's last line (base64).
    dgppBuild: { state: z.enum(["done", "running", "failed"]), last64: z.string() },
    // The link test's look in the image (fabric/linkmpi.render): a tool and its path ("" when absent).
    linkTool: { tool: z.string(), path: z.string() },
    // A replica's requests in flight before a roll stops it (serve/drain): /metrics' lines that
    // name its gauge, base64; null when /metrics does not answer.
    inflight: { metrics64: z.string().nullable() },
    // Copies between nodes (serve/fanout).
    recv: { path: z.string() },
    sent: { bytes: int().nonnegative() },
    // The CLI's scripts.
    benchKey: { key64: z.string() },
    heldSecret: { value64: z.string() },
    need: { index: int().nonnegative(), ok: z.boolean() },
    nodeMemory: { memKiB: count(), wsf: z.string(), apps64: z.string().optional(), appsRc: int().optional() },
    engineRunning: {},
    // doctor's checks of what makes a node wedge (cli/doctorwedge).
    wedge: { swapKiB: int().nonnegative(), oomKiller: z.string(), shmKiB: int().nonnegative() },
    wedgeShm: { container: z.string(), ipc: z.string(), shmBytes: int().nonnegative() },
    kvLog: { log64: z.string(), saved64: z.string() },
    probeOutput: { code: int(), out64: z.string() },
    smoke: { http: z.string(), body64: z.string() },
    load: { at: z.string(), http: z.string(), lines: z.string() },
    siteHome: { home64: z.string(), hf64: z.string(), hfExists: z.boolean() },
    siteMemory: { memTotal: count(), memAvailableKiB: count() },
    siteGpus: { gpus64: z.string() },
    siteDocker: { docker64: z.string(), images64: z.string() },
    siteNic: { nic: z.string(), addr: z.string(), via: z.string() },
  };
}

type Fields = ReturnType<typeof fieldsOfEachKind>;
export type RecordKind = keyof Fields;

/** The record of each kind, `kind` included. */
export type RecordOf<K extends RecordKind> = { kind: K } & z.infer<z.ZodObject<Fields[K]>>;
export type NodeRecord = { [K in RecordKind]: RecordOf<K> }[RecordKind];

type Schemas = { [K in RecordKind]: z.ZodType<RecordOf<K>> };

let built: Schemas | undefined;

/** The schema of each kind (strict: a field no writer prints is an error, as is a missing one). */
export function recordSchemas(): Schemas {
  if (built !== undefined) return built;
  const { z } = require("zod") as typeof import("zod");
  const fields = fieldsOfEachKind();
  const out: Record<string, z.ZodType> = {};
  for (const [kind, f] of Object.entries(fields)) out[kind] = z.strictObject({ kind: z.literal(kind), ...f });
  built = out as Schemas;
  return built;
}

/** The kinds, in the order this module lists them. */
export function recordKinds(): RecordKind[] {
  return Object.keys(fieldsOfEachKind()) as RecordKind[];
}
