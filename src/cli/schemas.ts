/**
 * The `--json` output of every command, as zod schemas. The commands build their reports with
 * the types inferred here and check them against the schema before printing, and the tests check
 * real output from the simulated site against the same schemas.
 *
 * Schemas are built inside functions: a zod object at module scope breaks serialized providers
 * (DESIGN.md), and this module must be safe to import from anywhere.
 */
import { z } from "zod";
import { readySchema } from "../serve/phases";
import { DEPLOY_TARGETS } from "../recipe/types";
import { STEPS } from "../serve/sequence";
import { DRIFT_KINDS } from "../serve/drift";

const nullableString = () => z.string().nullable();

export function healthSchema() {
  return z.union([
    z.strictObject({
      checked: z.literal(false),
      reason: z.enum(["protected", "no-http", "no-api", "unreachable", "not-deployed"]),
    }),
    z.strictObject({
      checked: z.literal(true),
      ok: z.boolean(),
      httpCode: z.int().min(0),
      latencyMs: z.number().nonnegative(),
      models: z.array(z.string()),
      maxModelLen: z.int().nullable(),
    }),
  ]);
}

/** An engine's load from its /metrics (src/cli/load.ts): two reads `intervalS` apart on the node. */
export function loadSchema() {
  return z.union([
    z.strictObject({
      measured: z.literal(false),
      reason: z.enum(["no-metrics", "no-api", "protected", "no-http", "unreachable", "failed"]),
      detail: nullableString(),
    }),
    z.strictObject({
      measured: z.literal(true),
      /** null: unknown (the engine's value is no finite number). */
      running: z.number().nonnegative().nullable(),
      waiting: z.number().nonnegative().nullable(),
      /** The KV cache's used fraction (0 to 1), as the engine reports it; null: none, or unknown. */
      kvCacheUsage: z.number().min(0).nullable(),
      /** Over the interval; null when a counter is missing or went back (the engine restarted). */
      promptTokensPerS: z.number().nonnegative().nullable(),
      generationTokensPerS: z.number().nonnegative().nullable(),
      intervalS: z.number().positive(),
    }),
  ]);
}

export function statusEntrySchema() {
  return z.strictObject({
    deployment: z.string(),
    node: z.string(),
    rank: z.int().min(0),
    protected: z.boolean(),
    target: z.strictObject({ kind: z.enum(DEPLOY_TARGETS), name: nullableString() }),
    /** false: this rank runs no process of its own (a DGPP peer: rank 0 brings it up). */
    runs: z.boolean(),
    /** null: not known (the node is unreachable, or its status would need an HTTP request). */
    running: z.boolean().nullable(),
    startedAt: nullableString(),
    drift: z
      .strictObject({
        kind: z.enum(DRIFT_KINDS),
        files: z.array(z.string()),
      })
      .nullable(),
    env: z
      .strictObject({
        path: z.string(),
        profile: nullableString(),
        rendered: nullableString(),
        sha256: nullableString(),
        edited: z.boolean(),
      })
      .nullable(),
    health: healthSchema(),
    /**
     * One 1-token completion (sm121:liveness timeout) when /v1/models answered: null when not asked;
     * "busy" with ms null when the load saw the engine generate tokens (no completion sent);
     * "passive" (or "hung") on a protected node without --yes: no request, the process's state
     * and its log (serve/passive), `passive` saying what it saw.
     */
    live: z
      .strictObject({
        verdict: z.enum(["ok", "busy", "hung", "refused", "loading", "passive"]),
        timeoutS: z.number().positive(),
        ms: z.number().nonnegative().nullable(),
      })
      .nullable(),
    kvCache: z
      .strictObject({
        line: z.string(),
        tokens: nullableString(),
        /** Where the engine keeps the cache, as its line says (vLLM: `GPU KV cache size`, `CPU ...`); null: unsaid. */
        device: z.enum(["CPU", "GPU"]).nullable(),
        source: z.enum(["log", "saved"]),
      })
      .nullable(),
    load: loadSchema(),
    /** Where the last start's time to ready went, as the node keeps it (serve/phases); null: none kept. */
    ready: readySchema().nullable(),
    /** What happened here between runs, in words: a reboot, the tripwire, the keeper (serve/lifeplan). */
    between: z.array(z.string()),
    error: nullableString(),
  });
}

export function statusNodeSchema() {
  return z.strictObject({
    node: z.string(),
    protected: z.boolean(),
    reachable: z.boolean(),
    error: nullableString(),
    memAvailableGiB: z.number().nonnegative().nullable(),
    memGateGiB: z.number().positive().nullable(),
    watermarkScaleFactor: nullableString(),
    gpuApps: z.array(z.strictObject({ pid: z.int(), name: z.string(), usedMiB: z.number().nullable() })).nullable(),
    gpuProbe: z
      .union([
        z.strictObject({ ran: z.literal(false), reason: z.enum(["not-configured", "unreachable"]) }),
        z.strictObject({
          ran: z.literal(true),
          code: z.int().nullable(),
          output: z.string(),
          seconds: z.number().nonnegative(),
        }),
      ])
      .nullable(),
  });
}

export function statusSchema() {
  return z.strictObject({
    stack: z.string(),
    ok: z.boolean(),
    nodes: z.array(statusNodeSchema()),
    deployments: z.array(
      z.strictObject({
        deployment: z.string(),
        recipe: z.string(),
        engine: z.string(),
        deploy: z.enum(DEPLOY_TARGETS),
        profile: nullableString(),
        nodes: z.array(statusEntrySchema()),
      }),
    ),
  });
}

export function smokeSchema() {
  return z.strictObject({
    stack: z.string(),
    node: z.string(),
    ok: z.boolean(),
    results: z.array(
      z.strictObject({
        deployment: z.string(),
        url: z.string(),
        model: nullableString(),
        ok: z.boolean(),
        httpCode: z.int().min(0),
        latencyMs: z.number().nonnegative(),
        firstByteMs: z.number().nonnegative(),
        answer: nullableString(),
        completionTokens: z.int().min(0).nullable(),
        error: nullableString(),
      }),
    ),
  });
}

export function latencySchema() {
  return z.strictObject({
    count: z.int().min(0),
    mean: z.number().nonnegative(),
    min: z.number().nonnegative(),
    p50: z.number().nonnegative(),
    p90: z.number().nonnegative(),
    p99: z.number().nonnegative(),
    max: z.number().nonnegative(),
  });
}

export function benchSchema() {
  return z.strictObject({
    deployment: nullableString(),
    urls: z.array(z.string()).min(1),
    model: z.string(),
    concurrency: z.int().min(1),
    requests: z.int().min(1),
    promptTokens: z.int().min(1),
    maxTokens: z.int().min(1),
    completed: z.int().min(0),
    errors: z.int().min(0),
    retried: z.int().min(0),
    errorSamples: z.array(z.string()),
    durationS: z.number().nonnegative(),
    requestsPerS: z.number().nonnegative(),
    outputTokens: z.int().min(0),
    outputTokensPerS: z.number().nonnegative(),
    ttftMs: latencySchema(),
    itlMs: latencySchema(),
    e2eMs: latencySchema(),
    clientCpuPercent: z.number().nonnegative(),
  });
}

/** `sm121 render <deployment> --json` (src/cli/render.ts renderJson). */
export function renderSchema() {
  return z.strictObject({
    deployment: z.string(),
    recipe: z.string(),
    engine: z.string(),
    deploy: z.enum(DEPLOY_TARGETS),
    shape: z.enum(["per-node", "head-coordinated"]),
    identity: z.string().regex(/^[0-9a-f]{64}$/),
    nodes: z
      .array(
        z.strictObject({
          node: z.string(),
          rank: z.int().min(0),
          host: z.string(),
          argv: z.array(z.string()),
          launch: z.string(),
          env: z.record(z.string(), z.string()),
          files: z.array(
            z.strictObject({ path: z.string(), sha256: z.string().regex(/^[0-9a-f]{64}$/), content: z.string() }),
          ),
          /** The scripts `pulumi up` runs on the node, by step (src/serve/sequence.ts); one with --step. */
          steps: z.partialRecord(z.enum(STEPS), z.string()),
        }),
      )
      .min(1),
  });
}

/** `sm121 validate --json`: every input error with its place, field, problem and fix. */
export function validateSchema() {
  return z.strictObject({
    stack: z.string(),
    ok: z.boolean(),
    recipes: z.int().min(0),
    profiles: z.int().min(0),
    nodes: z.int().min(0),
    deployments: z.array(z.string()),
    errors: z.array(
      z.strictObject({
        file: z.string(),
        line: z.int().min(1),
        col: z.int().min(1),
        field: z.string(),
        problem: z.string(),
        fix: z.string(),
        /** The one-line form: file:line:col: field: problem; fix. */
        message: z.string(),
      }),
    ),
    warnings: z.array(z.string()),
  });
}

/** `sm121 profiles --json`: seed 001's list of the profiles and the nodes. */
export function profilesSchema() {
  return z.strictObject({
    stack: z.string(),
    recipes: z.array(
      z.strictObject({
        recipe: z.string(),
        dir: z.string(),
        profiles: z.array(
          z.strictObject({
            name: z.string(),
            file: z.string(),
            /** invalid: the file does not parse; `error` says why. */
            status: z.enum(["stable", "experimental", "invalid"]),
            runnable: z.boolean().nullable(),
            description: nullableString(),
            /** The node recipe it is for (`# sm121-recipe:`). */
            nodeRecipe: nullableString(),
            deployments: z.array(z.string()),
            error: nullableString(),
          }),
        ),
      }),
    ),
    nodes: z.array(
      z.strictObject({
        node: z.string(),
        host: z.string(),
        protected: z.boolean(),
        recipes: z.array(z.string()),
        deployments: z.array(z.string()),
      }),
    ),
  });
}

export type StatusReport = z.infer<ReturnType<typeof statusSchema>>;
export type StatusEntry = z.infer<ReturnType<typeof statusEntrySchema>>;
export type StatusNode = z.infer<ReturnType<typeof statusNodeSchema>>;
export type Health = z.infer<ReturnType<typeof healthSchema>>;
export type Load = z.infer<ReturnType<typeof loadSchema>>;
export type SmokeReport = z.infer<ReturnType<typeof smokeSchema>>;
/** `sm121 doctor --fabric --json`: the link test's report (fabric/linkrun.serve). */
export function linkTestSchema() {
  return z.strictObject({
    stack: z.string(),
    deployment: z.string(),
    ok: z.boolean(),
    rdma: z.boolean(),
    minBusBandwidthGBps: z.number().nullable(),
    tool: z.strictObject({ kind: z.enum(["all_reduce_perf", "torch"]), path: z.string().nullable(), why: z.string() }),
    transport: z.strictObject({ kind: z.enum(["ib", "socket", "other"]), name: z.string() }).nullable(),
    avgBusBandwidthGBps: z.number().nullable(),
    devices: z.array(z.string()),
    rows: z.array(z.strictObject({ bytes: z.int(), busbw: z.number(), busbwInPlace: z.number(), algbw: z.number() })),
    failures: z.array(z.strictObject({ kind: z.string(), message: z.string() })),
    ranks: z.array(z.strictObject({ node: z.string(), rank: z.int(), code: z.int().nullable() })),
  });
}

export type SmokeResult = SmokeReport["results"][number];
export type Latency = z.infer<ReturnType<typeof latencySchema>>;
export type BenchReport = z.infer<ReturnType<typeof benchSchema>>;
export type ValidateReport = z.infer<ReturnType<typeof validateSchema>>;
export type ProfilesReport = z.infer<ReturnType<typeof profilesSchema>>;

/** Prints a report as JSON after checking it against its schema (a mismatch is a bug here). */
export function jsonOut<T>(schema: z.ZodType<T>, report: T): string {
  return JSON.stringify(schema.parse(report), null, 2);
}
