/**
 * The site's schema: what each `sm121:` key of the stack's configuration may hold, with its default
 * (./site reads a stack's configuration through it).
 */
import { z } from "zod";
import { nodeFabricSchema, siteFabricSchema } from "../fabric/site.recipe";
import { msg, type Msg } from "../text/messages";
import { zodMsg } from "./issues";
import { KEEP_DEFAULTS, LIVENESS_DEFAULTS, TRIPWIRE_DEFAULTS, type NodeEnvKey } from "./types";

const IDENT = /^[a-z0-9][a-z0-9-]{0,47}$/;
const HOSTNAME = /^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$|^\[?[0-9a-fA-F:]+\]?$/;
export const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
/** A node path the site may name (HF_HOME): `~` or absolute, of characters no shell reads. */
export const NODE_PATH = /^~?[A-Za-z0-9_./:=,@+%-]*$/;
const PATH = /^[A-Za-z0-9~@:/._+-]+$/;
const SAFE_VALUE = /^[A-Za-z0-9_./:=,@+%-]*$/;
/** One command line of operator shell: no line break, NUL, other control (but tab) or invisible format character. */
const commandLine = (s: string): boolean => !/[\p{Cc}\p{Cf}]/u.test(s.replace(/\t/g, ""));

/** `pulumi config set` stores every value as a string; numbers and booleans are read from them. */
function num() {
  return z.preprocess((v) => (typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v), z.number());
}
function int() {
  return z.preprocess((v) => (typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : v), z.int());
}
/** The tripwire's floor: GiB of MemAvailable, 0 for no tripwire. */
function floor() {
  return num().pipe(z.number().min(0).max(1024));
}
function relief() {
  return z.enum(["off", "drop_caches"]);
}
function flag() {
  return z.preprocess((v) => (v === "true" ? true : v === "false" ? false : v), z.boolean());
}

let built: ReturnType<typeof buildSchema> | undefined;

/**
 * The site's schema, built on the first parse and kept: it holds message keys, never words, so
 * one schema serves every language (a parse of a small site is mostly the building).
 */
export function siteSchema(): ReturnType<typeof buildSchema> {
  return (built ??= buildSchema());
}

function buildSchema() {
  const ident = (what: string | Msg) =>
    z.string().regex(IDENT, { error: zodMsg(msg("spec.site.ident", { what }), msg("spec.renameIt")) });
  const path = (what: string | Msg) =>
    z
      .string()
      .regex(PATH, { error: zodMsg(msg("spec.pathChars", { what }), msg("spec.pathCharsFix")) })
      .refine((s) => !s.split("/").includes(".."), {
        error: zodMsg(msg("spec.dotDot", { what }), msg("spec.dotDotFix")),
      })
      .refine((s) => !s.startsWith("-"), {
        error: zodMsg(msg("spec.leadingDash", { what }), msg("spec.leadingDashFix")),
      })
      .refine((s) => !/^~[^/]/.test(s), { error: zodMsg(msg("spec.tildeUser", { what }), msg("spec.tildeUserFix")) });
  const relative = (what: string, base: Msg, example: string) =>
    path(what).refine((s) => !s.startsWith("/") && !s.startsWith("~"), {
      error: zodMsg(msg("spec.site.relative", { what, base }), msg("spec.writeEg", { example })),
    });
  const value = (what: Msg) =>
    z
      .union([z.string(), z.number(), z.boolean()])
      .transform(String)
      .refine((s) => SAFE_VALUE.test(s), {
        error: zodMsg(msg("spec.site.valueChars", { what }), msg("spec.pathCharsFix")),
      });
  const vars = z
    .record(
      z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: zodMsg(msg("spec.site.varName"), msg("spec.renameIt")) }),
      value(msg("spec.what.varValue")),
    )
    .default({});
  const nodeRecipe = z.strictObject({
    dir: path("dir"),
    start: relative("start", msg("spec.what.recipeDir"), "start.sh").default("start.sh"),
    stop: relative("stop", msg("spec.what.recipeDir"), "stop.sh").default("stop.sh"),
    container: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, {
      error: zodMsg(msg("spec.site.container"), msg("spec.site.containerFix")),
    }),
    dockerArgs: z
      .string()
      .regex(/^[A-Za-z0-9_./:=,@+% -]*$/, {
        error: zodMsg(msg("spec.site.dockerArgs"), msg("spec.site.dockerArgsFix")),
      })
      .optional(),
    vars,
    ownedMounts: z
      .array(
        path(msg("spec.what.ownedMount")).refine((s) => s.startsWith("/"), {
          error: zodMsg(msg("spec.site.ownedMount"), msg("spec.site.ownedMountFix")),
        }),
      )
      .default([]),
  });
  const node = z.strictObject({
    host: z.enum(["local", "ssh"]).default("ssh"),
    ssh: z
      .strictObject({
        host: z.string().regex(HOSTNAME, { error: zodMsg(msg("spec.site.host"), msg("spec.site.hostFix")) }),
        port: int().pipe(z.int().min(1).max(65535)).optional(),
        user: z
          .string()
          .regex(/^[a-z_][a-z0-9_-]{0,31}$/, {
            error: zodMsg(msg("spec.site.user"), msg("spec.writeEg", { example: "ops" })),
          })
          .optional(),
      })
      .optional(),
    ip: z.string().regex(IPV4, { error: zodMsg(msg("spec.site.ip"), msg("spec.site.ipFix")) }),
    protected: flag().default(false),
    env: z
      .strictObject({
        // A node path: `~/` is the node user's home, expanded on the node.
        HF_HOME: z
          .union([z.string(), z.number(), z.boolean()])
          .transform(String)
          .refine((s) => NODE_PATH.test(s), {
            error: zodMsg(msg("spec.site.hfHomeChars"), msg("spec.pathCharsFix")),
          })
          .refine((s) => s.startsWith("/") || s === "~" || s.startsWith("~/"), {
            error: zodMsg(msg("spec.site.hfHomePath"), msg("spec.site.hfHomePathFix")),
          }),
        BIND: value(msg("spec.what.nodeEnv")).refine((s) => IPV4.test(s), {
          error: zodMsg(msg("spec.site.bind"), msg("spec.site.bindFix")),
        }),
        PORT: value(msg("spec.what.nodeEnv")).refine(
          (s) => /^\d{1,5}$/.test(s) && Number(s) >= 1 && Number(s) <= 65535,
          { error: zodMsg(msg("spec.site.port"), msg("spec.site.portFix")) },
        ),
        REQUIRE_IDLE_GPU: value(msg("spec.what.nodeEnv")),
      } satisfies Record<NodeEnvKey, z.ZodType>)
      .partial()
      .default({}),
    vars,
    // The printable check comes first: z.url() drops a newline from what it returns instead of refusing it.
    gatewayUrl: z
      .string()
      .regex(/^[\x21-\x7e]+$/, { error: zodMsg(msg("spec.site.urlChars"), msg("spec.site.urlCharsFix")) })
      .pipe(
        z.url({
          protocol: /^https?$/,
          error: zodMsg(msg("spec.site.url"), msg("spec.writeEg", { example: "http://203.0.113.12:8000" })),
        }),
      )
      .optional(),
    gpuProbe: z
      .string()
      .min(1)
      .refine(commandLine, { error: zodMsg(msg("spec.site.gpuProbe"), msg("spec.site.gpuProbeFix")) })
      .optional(),
    minMemAvailableGiB: num().pipe(z.number().positive()).optional(),
    memFloorGiB: floor().optional(),
    memRelief: relief().optional(),
    recipes: z.record(ident(msg("spec.what.nodeRecipe")), nodeRecipe).default({}),
    stateDir: path("stateDir").default("~/.sm121"),
    fabric: nodeFabricSchema().optional(),
    gpus: int().pipe(z.int().min(1).max(64)).default(1),
  });
  const deployment = z
    .strictObject({
      name: ident("name").optional(),
      recipe: ident("recipe"),
      profile: ident("profile").optional(),
      nodes: z
        .array(ident(msg("spec.what.nodeName")))
        .min(1, { error: zodMsg(msg("spec.site.noNodes"), msg("spec.site.noNodesFix")) })
        .optional(),
      // One node group per replica: rendered as one deployment per group, named <name>-1, <name>-2, ...
      replicas: z
        .array(
          z
            .array(ident(msg("spec.what.nodeName")))
            .min(1, { error: zodMsg(msg("spec.site.emptyReplica"), msg("spec.site.emptyReplicaFix")) }),
        )
        .min(1, {
          error: zodMsg(
            msg("spec.site.noReplicas"),
            msg("spec.writeEg", { example: "replicas: [[spark1], [spark2]]" }),
          ),
        })
        .optional(),
      roll: z.enum(["one", "all"]).optional(),
      // A node group kept free for the replicas: a roll starts the new recipe there first (a surge).
      spare: z
        .array(ident(msg("spec.what.nodeName")))
        .min(1, { error: zodMsg(msg("spec.site.emptySpare"), msg("spec.writeEg", { example: "spare: [spark5]" })) })
        .optional(),
      overlay: relative("overlay", msg("spec.what.projectDir"), "overlays/qwen38/mtp-r3").optional(),
      overlayWins: flag().default(false),
    })
    .superRefine((d, ctx) => {
      // Either form names the nodes; without both, the missing key is nodes, reported as zod reports one.
      if (d.nodes !== undefined || d.replicas !== undefined) return;
      ctx.addIssue({ code: "invalid_type", expected: "array", input: undefined, path: ["nodes"] });
    });
  // A bad value names its range: "sm121:liveness.timeout: 0 is out of range; use 1 to 600 s".
  const ranged = (what: string, min: number, max: number, unit: "seconds" | "restarts" | "week") => {
    const keys = { seconds: "spec.range.seconds", restarts: "spec.range.restarts", week: "spec.range.week" } as const;
    const range = msg(keys[unit], { min, max });
    const wholeNumber = z.int({ error: zodMsg(msg("spec.site.notWhole", { what }), range) });
    const asNumber = (v: unknown) => (typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v);
    const inRange = wholeNumber
      .min(min, { error: zodMsg(msg("spec.site.below", { what, min }), range) })
      .max(max, { error: zodMsg(msg("spec.site.above", { what, max }), range) });
    return z.preprocess(asNumber, inRange);
  };
  const keep = z.strictObject({
    maxFailures: ranged("maxFailures", 1, 100, "restarts").default(KEEP_DEFAULTS.maxFailures),
    windowS: ranged("windowS", 60, 604_800, "week").default(KEEP_DEFAULTS.windowS),
    backoffS: ranged("backoffS", 1, 3600, "seconds").default(KEEP_DEFAULTS.backoffS),
    backoffMaxS: ranged("backoffMaxS", 1, 86_400, "seconds").default(KEEP_DEFAULTS.backoffMaxS),
  });
  const liveness = z.strictObject({
    timeout: ranged("timeout", 1, 600, "seconds").default(LIVENESS_DEFAULTS.timeoutS),
    maxRestarts: ranged("maxRestarts", 0, 100, "restarts").default(LIVENESS_DEFAULTS.maxRestarts),
    windowS: ranged("windowS", 60, 604_800, "week").default(LIVENESS_DEFAULTS.windowS),
  });
  return z.strictObject({
    nodes: z.record(ident(msg("spec.what.nodeName")), node),
    deployments: z.array(deployment).default([]),
    minMemAvailableGiB: num().pipe(z.number().positive()).default(100),
    memTimeoutS: int().pipe(z.int().positive()).default(600),
    readyGraceS: int().pipe(z.int().min(0)).default(300),
    recipesDir: relative("recipesDir", msg("spec.what.projectDir"), "recipes").default("recipes"),
    knownHosts: path("knownHosts").default("~/.ssh/known_hosts"),
    hostKeys: z.enum(["strict", "accept-new"]).default("strict"),
    gateway: z
      .strictObject({
        path: path("path"),
        format: z.enum(["sm121", "litellm", "llama-swap"]).default("sm121"),
        model: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$/, {
            error: zodMsg(msg("spec.servedChars"), msg("spec.site.modelFix")),
          })
          .optional(),
        node: ident("node").optional(),
      })
      .optional(),
    scrapeTargets: z
      .strictObject({
        path: path("path").refine((s) => s.endsWith(".json"), {
          error: zodMsg(msg("spec.site.scrapeJson"), msg("spec.writeEg", { example: "~/prometheus/sm121.json" })),
        }),
        node: ident("node").optional(),
      })
      .optional(),
    rollback: z.enum(["off", "auto"]).default("off"),
    dgppPollS: num().pipe(z.number().positive().max(300)).default(30),
    preflight: flag().default(false),
    lockWaitS: int().pipe(z.int().min(0).max(3600)).default(60),
    drainS: int().pipe(z.int().min(0).max(3600)).default(30),
    keepBackups: int().pipe(z.int().min(1).max(100)).default(3),
    hooks: z.enum(["engine", "pulumi-command"]).default("engine"),
    modelCache: z.enum(["off", "keep", "remove"]).default("off"),
    imageSync: flag().default(false),
    requireApiKey: flag().default(false),
    fabric: siteFabricSchema(),
    fabricCheck: flag().default(false),
    memFloorGiB: floor().default(TRIPWIRE_DEFAULTS.floorGiB),
    memSampleS: num().pipe(z.number().min(0.1).max(10)).default(TRIPWIRE_DEFAULTS.sampleS),
    memRelief: relief().default(TRIPWIRE_DEFAULTS.relief),
    keep: keep.default({ ...KEEP_DEFAULTS }),
    liveness: liveness.default({
      timeout: LIVENESS_DEFAULTS.timeoutS,
      maxRestarts: LIVENESS_DEFAULTS.maxRestarts,
      windowS: LIVENESS_DEFAULTS.windowS,
    }),
  });
}
