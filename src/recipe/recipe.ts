/**
 * Recipes: `recipes/<name>.toml`, parsed with smol-toml and validated with zod. The schema is
 * built once, by the first recipe read (zod takes milliseconds to build it, and a project reads
 * every recipe of its directory at each plan).
 */
import { basename } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";
import { MAX_ERRORS, SpecError, throwIfAny } from "./errors";
import { msg, type Msg } from "../text/messages";
import { issueToSpecError, keysAt, zodMsg } from "./issues";
import { dotted, locateToml, protoKeys, type FieldPath } from "./locate";
import { INTERFACE_ENV, RDMA_ENV } from "../fabric/site.recipe";
import { DEPLOY_TARGETS, ENGINE_NAMES, type EngineName, type Recipe, type RecipeMemory } from "./types";
import { gateOf, gateSchema } from "./gate";

const SAFE_LINE = /^[^\n\r\0]*$/;
/**
 * Control characters besides tab (and the line breaks SAFE_LINE names) and invisible format
 * characters (U+200B, U+202E, ...): the plan would not show them.
 */
const unseen = (s: string): boolean => /[\p{Cc}\p{Cf}]/u.test(s.replace(/[\t\n\r\0]/g, ""));
const IDENT = /^[a-z0-9][a-z0-9-]{0,47}$/;
/** `~user/...`: the node would not expand it (scripts quote paths), so it names a relative directory `~user`. */
const TILDE_USER = /^~[^/]/;

function recipeSchema() {
  const line = (what: Msg) =>
    z
      .string()
      .regex(SAFE_LINE, { error: zodMsg(msg("spec.lineBreak", { what }), msg("spec.lineBreakFix")) })
      .refine((s) => !unseen(s), { error: zodMsg(msg("spec.unseenChar", { what }), msg("spec.unseenCharFix")) });
  const pathLike = (what: string) =>
    z
      .string()
      .regex(/^[A-Za-z0-9~@:/._+-]+$/, { error: zodMsg(msg("spec.pathChars", { what }), msg("spec.pathCharsFix")) })
      .refine((s) => !s.split("/").includes(".."), {
        error: zodMsg(msg("spec.dotDot", { what }), msg("spec.dotDotFix")),
      })
      .refine((s) => !s.startsWith("-"), {
        error: zodMsg(msg("spec.leadingDash", { what }), msg("spec.leadingDashFix")),
      })
      .refine((s) => !TILDE_USER.test(s), { error: zodMsg(msg("spec.tildeUser", { what }), msg("spec.tildeUserFix")) });
  return z.strictObject({
    name: z
      .string()
      .regex(IDENT, { error: zodMsg(msg("spec.recipe.name"), msg("spec.recipe.nameFix")) })
      .optional(),
    engine: z
      .string()
      .regex(/^[a-z0-9-]{1,32}$/, {
        error: zodMsg(msg("spec.recipe.engine"), msg("spec.useOneOf", { values: ENGINE_NAMES.join(", ") })),
      })
      .default("vllm"),
    deploy: z.enum(DEPLOY_TARGETS).default("docker"),
    model: pathLike("model").optional(),
    served_model_name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$/, { error: zodMsg(msg("spec.servedChars"), msg("spec.renameIt")) })
      .optional(),
    image: z
      .string()
      .regex(/^[a-z0-9][a-z0-9._/:@-]{0,199}$/, {
        error: zodMsg(msg("spec.recipe.image"), msg("spec.recipe.imageFix")),
      })
      .optional(),
    engine_version: z
      .string()
      .regex(/^\d+\.\d+(\.\d+)?([.+-][A-Za-z0-9.]+)?$/, {
        error: zodMsg(msg("spec.recipe.version"), msg("spec.recipe.versionFix")),
      })
      .optional(),
    entrypoint: z
      .array(line(msg("spec.what.entrypoint")))
      .min(1)
      .optional(),
    tp: z.int().min(1).max(64).default(1),
    port: z
      .int()
      .min(1024, { error: zodMsg(msg("spec.recipe.port"), msg("spec.recipe.portFix")) })
      .max(65535)
      .optional(),
    args: z.array(line(msg("spec.what.argument"))).default([]),
    env: z
      .record(
        z.string().regex(/^[A-Z_][A-Z0-9_]*$/, { error: zodMsg(msg("spec.recipe.envKey"), msg("spec.renameIt")) }),
        line(msg("spec.what.envValue")),
      )
      .default({}),
    mounts: z
      .array(
        z
          .string()
          .regex(/^(~|\/)[A-Za-z0-9@._/+-]*:\/[A-Za-z0-9@._/+-]+(:ro|:rw)?$/, {
            error: zodMsg(msg("spec.recipe.mount"), msg("spec.recipe.mountFix")),
          })
          .refine((m) => !m.split(/[:/]/).includes(".."), {
            error: zodMsg(msg("spec.dotDotIn"), msg("spec.dotDotPathsFix")),
          })
          .refine((m) => !TILDE_USER.test(m) || m.startsWith("~:"), {
            error: zodMsg(msg("spec.tildeUserIn"), msg("spec.tildeUserFix")),
          }),
      )
      .default([]),
    hooks: z
      .strictObject({
        before_serve: z.array(line(msg("spec.what.hook")).min(1)).default([]),
        after_stop: z.array(line(msg("spec.what.hook")).min(1)).default([]),
      })
      .default({ before_serve: [], after_stop: [] }),
    readiness: z
      .strictObject({
        timeout_s: z.int().min(1).max(86400).default(1800),
        max_model_len: z.int().min(1).optional(),
        proofs: z.array(line(msg("spec.what.proof")).min(1)).default([]),
      })
      .default({ timeout_s: 1800, proofs: [] }),
    dgpp: z
      .strictObject({
        repo: pathLike("repo")
          .refine((s) => !/^[A-Za-z][A-Za-z0-9+.-]*::/.test(s), {
            error: zodMsg(msg("spec.recipe.repoTransport"), msg("spec.recipe.repoTransportFix")),
          })
          .optional(),
        rev: z
          .string()
          .regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$/, {
            error: zodMsg(msg("spec.recipe.rev"), msg("spec.recipe.revFix")),
          })
          .optional(),
        dir: pathLike("dir").default("~/dgpp"),
        http_port: z.int().min(1024).max(65535).default(18080),
        release: pathLike("release").optional(),
        roce_devices: z
          .string()
          .regex(/^[A-Za-z0-9_,-]+$/, { error: zodMsg(msg("spec.recipe.roce"), msg("spec.recipe.roceFix")) })
          .optional(),
        engine: z.record(z.string(), z.unknown()).default({}),
      })
      .optional(),
    profiles_dir: pathLike("profiles_dir")
      .refine((s) => !s.startsWith("/") && !s.startsWith("~"), {
        error: zodMsg(msg("spec.recipe.profilesDir"), msg("spec.recipe.profilesDirFix")),
      })
      .optional(),
    rollback: z.enum(["off", "auto"]).default("off"),
    memory: memorySchema().optional(),
    gate: gateSchema().optional(),
  });
}

/**
 * `[memory]`: what the memory fit uses while the checkpoint is not in a node's HF cache yet (its
 * config.json and safetensors index win when they are). The names are config.json's own, so the
 * values can be copied from the model's page.
 */
function memorySchema() {
  const count = (what: string) =>
    z
      .int({ error: zodMsg(msg("spec.memory.count", { what }), msg("spec.memory.countFix")) })
      .min(1)
      .max(1_000_000);
  return z.strictObject({
    weights_gb: z
      .number({ error: zodMsg(msg("spec.memory.weights"), msg("spec.memory.weightsFix")) })
      .positive()
      .max(10_000)
      .optional(),
    torch_dtype: z
      .enum(["bfloat16", "float16", "float32"], {
        error: zodMsg(msg("spec.memory.dtype"), msg("spec.useOneOf", { values: "bfloat16, float16, float32" })),
      })
      .optional(),
    num_hidden_layers: count("num_hidden_layers").optional(),
    num_key_value_heads: count("num_key_value_heads").optional(),
    head_dim: count("head_dim").optional(),
    kv_lora_rank: count("kv_lora_rank").optional(),
    qk_rope_head_dim: count("qk_rope_head_dim").optional(),
    overhead_gib: z
      .number({ error: zodMsg(msg("spec.memory.overhead"), msg("spec.memory.overheadFix")) })
      .min(0)
      .max(1000)
      .optional(),
  });
}

let builtSchema: ReturnType<typeof recipeSchema> | undefined;

/**
 * Reads one recipe file's text: TOML, the schema, and the rules across fields that hold for every
 * engine. Throws SpecError or SpecErrors when the file is not a recipe at all; the problems of a
 * recipe that is one come back with it, so that its engine's checks (engines/recipes) report theirs
 * at the same time.
 */
export function readRecipe(file: string, text: string): { recipe: Recipe; problems: SpecError[] } {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (e) {
    if (e instanceof TomlError) {
      const problem = e.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? "invalid TOML";
      throw new SpecError({
        file,
        line: e.line,
        col: e.column,
        field: "",
        problem: msg("spec.tomlSyntax", { problem }),
        fix: msg("spec.syntaxFix"),
      });
    }
    throw e;
  }
  const locate = (p: FieldPath) => locateToml(text, p);
  throwIfAny(
    protoKeys(raw).map(
      (p) =>
        new SpecError({ file, ...locate(p), field: dotted(p), problem: msg("spec.proto"), fix: msg("spec.protoFix") }),
    ),
  );
  const schema = (builtSchema ??= recipeSchema());
  const parsed = schema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    throwIfAny(
      parsed.error.issues
        .slice(0, MAX_ERRORS + 1)
        .flatMap((i) => issueToSpecError(i, file, locate, (p) => keysAt(schema, p))),
    );
    throw new Error("unreachable: zod failed without issues");
  }
  const r = parsed.data;
  const errors: SpecError[] = [];
  const err = (path: FieldPath, problem: Msg, fix: Msg) => {
    if (errors.length <= MAX_ERRORS)
      errors.push(new SpecError({ file, ...locate(path), field: dotted(path), problem, fix }));
  };
  const warnings: Msg[] = [];
  const known = (ENGINE_NAMES as readonly string[]).includes(r.engine);
  const engine: EngineName = known ? (r.engine as EngineName) : "vllm";
  if (!known) warnings.push(msg("spec.warn.engine", { file, engine: r.engine, known: ENGINE_NAMES.join(", ") }));
  const stem = basename(file).replace(/\.toml$/, "");
  if (r.name === undefined && !IDENT.test(stem)) {
    err(
      ["name"],
      msg("spec.recipe.stem", { stem: stem.length > 60 ? `${stem.slice(0, 57)}...` : stem }),
      msg("spec.recipe.stemFix"),
    );
  }
  checkShape(r, err);
  const recipe: Recipe = {
    name: r.name ?? stem,
    file,
    engine,
    engineAsWritten: r.engine,
    ...(r.engine_version !== undefined && { engineVersion: r.engine_version }),
    locate,
    deploy: r.deploy,
    ...(r.model !== undefined && { model: r.model }),
    ...(r.served_model_name !== undefined && { servedModelName: r.served_model_name }),
    ...(r.image !== undefined && { image: r.image }),
    ...(r.entrypoint !== undefined && { entrypoint: r.entrypoint }),
    tp: r.tp,
    ...(r.port !== undefined && { port: r.port }),
    args: r.args,
    env: r.env,
    mounts: r.mounts,
    hooks: { beforeServe: r.hooks.before_serve, afterStop: r.hooks.after_stop },
    readiness: {
      timeoutS: r.readiness.timeout_s,
      proofs: r.readiness.proofs,
      ...(r.readiness.max_model_len !== undefined && { maxModelLen: r.readiness.max_model_len }),
    },
    ...(r.dgpp !== undefined && {
      dgpp: {
        dir: r.dgpp.dir,
        httpPort: r.dgpp.http_port,
        engine: r.dgpp.engine,
        ...(r.dgpp.repo !== undefined && { repo: r.dgpp.repo }),
        ...(r.dgpp.rev !== undefined && { rev: r.dgpp.rev }),
        ...(r.dgpp.release !== undefined && { release: r.dgpp.release }),
        ...(r.dgpp.roce_devices !== undefined && { roceDevices: r.dgpp.roce_devices }),
      },
    }),
    ...(r.profiles_dir !== undefined && { profilesDir: r.profiles_dir }),
    rollback: r.rollback,
    ...(r.memory !== undefined && { memory: memoryOf(r.memory) }),
    ...(r.gate !== undefined && { gate: gateOf(r.gate) }),
    warnings,
  };
  return { recipe, problems: errors };
}

type Raw = z.infer<ReturnType<typeof recipeSchema>>;

function memoryOf(m: NonNullable<Raw["memory"]>): RecipeMemory {
  const shape: RecipeMemory["shape"] = {
    ...(m.torch_dtype !== undefined && { torch_dtype: m.torch_dtype }),
    ...(m.num_hidden_layers !== undefined && { num_hidden_layers: m.num_hidden_layers }),
    ...(m.num_key_value_heads !== undefined && { num_key_value_heads: m.num_key_value_heads }),
    ...(m.head_dim !== undefined && { head_dim: m.head_dim }),
    ...(m.kv_lora_rank !== undefined && { kv_lora_rank: m.kv_lora_rank }),
    ...(m.qk_rope_head_dim !== undefined && { qk_rope_head_dim: m.qk_rope_head_dim }),
  };
  return {
    ...(m.weights_gb !== undefined && { weightsBytes: Math.round(m.weights_gb * 1e9) }),
    shape,
    ...(m.overhead_gib !== undefined && { overheadGiB: m.overhead_gib }),
  };
}
type Err = (path: FieldPath, problem: Msg, fix: Msg) => void;

/** Rules across fields that hold for every engine: which fields each target needs. */
function checkShape(r: Raw, err: Err): void {
  if (r.deploy === "docker" && r.image === undefined)
    err(["image"], msg("spec.recipe.needsImage"), msg("spec.recipe.needsImageFix"));
  const program = r.entrypoint?.[0];
  if (program !== undefined && (program === "" || program.startsWith("-"))) {
    err(
      ["entrypoint", 0],
      program === "" ? msg("spec.recipe.programEmpty") : msg("spec.recipe.programDash", { program }),
      msg("spec.recipe.programFix"),
    );
  }
  if (r.deploy === "script" && r.profiles_dir === undefined)
    err(["profiles_dir"], msg("spec.recipe.needsProfiles"), msg("spec.recipe.needsProfilesFix"));
  if (r.deploy !== "script" && r.profiles_dir !== undefined)
    err(["profiles_dir"], msg("spec.recipe.profilesScript"), msg("spec.removeField", { field: "profiles_dir" }));
  if (r.deploy !== "docker" && r.deploy !== "script" && r.mounts.length > 0)
    err(
      ["mounts"],
      msg("spec.recipe.mountsTarget", { deploy: r.deploy }),
      msg("spec.removeField", { field: "mounts" }),
    );
  // A recipe runs on any node: the interfaces and RDMA ports are each node's, in the site's fabric.
  for (const k of [...INTERFACE_ENV, ...RDMA_ENV]) {
    if (k in r.env)
      err(["env", k], msg("spec.recipe.fabricEnv", { key: k }), msg("spec.recipe.fabricEnvFix", { key: k }));
  }
  for (const k of ["HF_TOKEN", "API_KEY"]) {
    if (k in r.env)
      err(
        ["env", k],
        msg("spec.recipe.secretEnv", { key: k }),
        msg("spec.recipe.secretEnvFix", { name: k === "HF_TOKEN" ? "hfToken" : "apiKey" }),
      );
  }
}
