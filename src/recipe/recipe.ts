/**
 * Recipes: `recipes/<name>.toml`, parsed with smol-toml and validated with zod. The schema is
 * built once, by the first recipe read (zod takes milliseconds to build it, and a project reads
 * every recipe of its directory at each plan).
 */
import { readFileSync, readdirSync } from "node:fs";
import { basename, join } from "node:path";
import { parse as parseToml, TomlError } from "smol-toml";
import { z } from "zod";
import { driverFor } from "../engines";
import { tableFor } from "../engines/options/versions";
import { collectErrors, MAX_ERRORS, SpecError, throwIfAny } from "./errors";
import { issueToSpecError, keysAt } from "./issues";
import { dotted, locateToml, protoKeys, type FieldPath } from "./locate";
import type { OptionTable } from "../engines/options/table";
import { DEPLOY_TARGETS, ENGINE_NAMES, type EngineName, type Recipe, type RecipeMemory } from "./types";

const SAFE_LINE = /^[^\n\r\0]*$/;
/** Control characters besides tab (and the line breaks SAFE_LINE names) and invisible format characters (U+200B, U+202E, ...): the plan would not show them. */
const unseen = (s: string): boolean => /[\p{Cc}\p{Cf}]/u.test(s.replace(/[\t\n\r\0]/g, ""));
const IDENT = /^[a-z0-9][a-z0-9-]{0,47}$/;
/** `~user/...`: the node would not expand it (scripts quote paths), so it names a relative directory `~user`. */
const TILDE_USER = /^~[^/]/;

function recipeSchema() {
  const line = (what: string) =>
    z.string()
      .regex(SAFE_LINE, { error: `${what} contains a newline or NUL; write it on one line` })
      .refine((s) => !unseen(s), { error: `${what} contains a control character or an invisible format character; remove it: the plan would not show it` });
  const pathLike = (what: string) =>
    z
      .string()
      .regex(/^[A-Za-z0-9~@:/._+-]+$/, { error: `${what} may contain only letters, digits and ~ @ : / . _ + -; remove spaces, quotes and shell characters` })
      .refine((s) => !s.split("/").includes(".."), { error: `${what} contains a ".." segment; use a path without ..` })
      .refine((s) => !s.startsWith("-"), { error: `${what} starts with "-"; a leading dash would be read as a flag` })
      .refine((s) => !TILDE_USER.test(s), { error: `${what} starts with ~user, which the node does not expand; write ~/ for the node user's home or an absolute path` });
  return z.strictObject({
    name: z.string().regex(IDENT, { error: "must be lower-case letters, digits and -, at most 48; rename it, e.g. qwen3-8b-tp2" }).optional(),
    engine: z.string().regex(/^[a-z0-9-]{1,32}$/, { error: "must be an engine name; use one of vllm, sglang, gr8, dgpp" }).default("vllm"),
    deploy: z.enum(DEPLOY_TARGETS).default("docker"),
    model: pathLike("model").optional(),
    served_model_name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$/, { error: "may contain only letters, digits and . _ / : -; rename it" }).optional(),
    image: z.string().regex(/^[a-z0-9][a-z0-9._/:@-]{0,199}$/, { error: "is not a docker image reference; write e.g. nvcr.io/nvidia/vllm:26.01-py3" }).optional(),
    engine_version: z.string().regex(/^\d+\.\d+(\.\d+)?([.+-][A-Za-z0-9.]+)?$/, {
      error: "is not a version; write the engine's version, e.g. 0.10.2 (`sm121 doctor` reads it from the image)",
    }).optional(),
    entrypoint: z.array(line("the entrypoint element")).min(1).optional(),
    tp: z.int().min(1).max(64).default(1),
    port: z.int().min(1024, { error: "must be 1024 or above; pick an unprivileged port such as 8000" }).max(65535).optional(),
    args: z.array(line("the argument")).default([]),
    env: z.record(z.string().regex(/^[A-Z_][A-Z0-9_]*$/, { error: "env keys are upper-case shell names; rename it" }), line("the env value")).default({}),
    mounts: z.array(z.string().regex(/^(~|\/)[A-Za-z0-9@._/+-]*:\/[A-Za-z0-9@._/+-]+(:ro|:rw)?$/, { error: "is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro" })
      .refine((m) => !m.split(/[:/]/).includes(".."), { error: 'contains a ".." segment; use paths without ..' })
      .refine((m) => !TILDE_USER.test(m) || m.startsWith("~:"), { error: "starts with ~user, which the node does not expand; write ~/ for the node user's home or an absolute path" })).default([]),
    hooks: z.strictObject({ before_serve: z.array(line("a hook").min(1)).default([]), after_stop: z.array(line("a hook").min(1)).default([]) }).default({ before_serve: [], after_stop: [] }),
    readiness: z.strictObject({
      timeout_s: z.int().min(1).max(86400).default(1800),
      max_model_len: z.int().min(1).optional(),
      proofs: z.array(line("the proof text").min(1)).default([]),
    }).default({ timeout_s: 1800, proofs: [] }),
    dgpp: z.strictObject({
      repo: pathLike("repo").refine((s) => !/^[A-Za-z][A-Za-z0-9+.-]*::/.test(s), { error: 'repo uses git\'s "<transport>::" form, which runs a helper program (ext:: runs any command); use an https://, ssh:// or git@host:path URL' }).optional(),
      rev: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,99}$/, { error: "is not a commit or tag; write e.g. 3f2d7d7 or v0.4.1" }).optional(),
      dir: pathLike("dir").default("~/dgpp"),
      http_port: z.int().min(1024).max(65535).default(18080),
      release: pathLike("release").optional(),
      roce_devices: z.string().regex(/^[A-Za-z0-9_,-]+$/, { error: "is a comma-separated list of RoCE device names; write e.g. rocep1s0f0,rocep1s0f1" }).optional(),
      engine: z.record(z.string(), z.unknown()).default({}),
    }).optional(),
    profiles_dir: pathLike("profiles_dir").refine((s) => !s.startsWith("/") && !s.startsWith("~"), { error: "profiles_dir is relative to the recipes directory; write e.g. qwen38-flash/profiles" }).optional(),
    rollback: z.enum(["off", "auto"]).default("off"),
    memory: memorySchema().optional(),
  });
}

/**
 * `[memory]`: what the memory fit uses while the checkpoint is not in a node's HF cache yet (its
 * config.json and safetensors index win when they are). The names are config.json's own, so the
 * values can be copied from the model's page.
 */
function memorySchema() {
  const count = (what: string) => z.int({ error: `${what} is a whole number; copy it from the model's config.json` }).min(1).max(1_000_000);
  return z.strictObject({
    weights_gb: z.number({ error: "weights_gb is the checkpoint's size in GB (10^9 bytes); write e.g. 65.5 (the safetensors index's metadata.total_size / 1e9)" }).positive().max(10_000).optional(),
    torch_dtype: z.enum(["bfloat16", "float16", "float32"], { error: "torch_dtype is the model's dtype as config.json writes it; use bfloat16, float16 or float32" }).optional(),
    num_hidden_layers: count("num_hidden_layers").optional(),
    num_key_value_heads: count("num_key_value_heads").optional(),
    head_dim: count("head_dim").optional(),
    kv_lora_rank: count("kv_lora_rank").optional(),
    qk_rope_head_dim: count("qk_rope_head_dim").optional(),
    overhead_gib: z.number({ error: "overhead_gib is the engine's memory beside weights and KV cache, in GiB; write e.g. 4" }).min(0).max(1000).optional(),
  });
}

let builtSchema: ReturnType<typeof recipeSchema> | undefined;

/** Parses and validates one recipe file's text. Throws SpecError or SpecErrors. */
export function parseRecipe(file: string, text: string): Recipe {
  let raw: unknown;
  try {
    raw = parseToml(text);
  } catch (e) {
    if (e instanceof TomlError) {
      const problem = e.message.split("\n")[0]?.replace(/^Invalid TOML document: /, "") ?? "invalid TOML";
      throw new SpecError({ file, line: e.line, col: e.column, field: "", problem: `TOML syntax: ${problem}`, fix: "fix the syntax at this spot" });
    }
    throw e;
  }
  const locate = (p: FieldPath) => locateToml(text, p);
  throwIfAny(protoKeys(raw).map((p) => new SpecError({ file, ...locate(p), field: dotted(p), problem: "__proto__ is not a name sm121 accepts", fix: "rename the key" })));
  const schema = (builtSchema ??= recipeSchema());
  const parsed = schema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    throwIfAny(parsed.error.issues.slice(0, MAX_ERRORS + 1).flatMap((i) => issueToSpecError(i, file, locate, (p) => keysAt(schema, p))));
    throw new Error("unreachable: zod failed without issues");
  }
  const r = parsed.data;
  const errors: SpecError[] = [];
  const err = (path: FieldPath, problem: string, fix: string) => {
    if (errors.length <= MAX_ERRORS) errors.push(new SpecError({ file, ...locate(path), field: dotted(path), problem, fix }));
  };
  const warnings: string[] = [];
  const known = (ENGINE_NAMES as readonly string[]).includes(r.engine);
  const engine: EngineName = known ? (r.engine as EngineName) : "vllm";
  if (!known) warnings.push(`${file}: engine "${r.engine}" is unknown; using the vLLM driver (known: ${ENGINE_NAMES.join(", ")})`);
  const stem = basename(file).replace(/\.toml$/, "");
  if (r.name === undefined && !IDENT.test(stem)) {
    err(["name"], `the recipe is named after its file, and "${stem.length > 60 ? `${stem.slice(0, 57)}...` : stem}" is not a recipe name`, 'rename the file to lower-case letters, digits and - (at most 48), or set name = "<name>"');
  }
  // A script recipe has no args of its own: its profiles' EXTRA_VLLM_ARGS are checked where they are rendered.
  const table = r.deploy === "script"
    ? undefined
    : tableFor(engine, { engineVersion: r.engine_version, image: r.image, file });
  if (table?.warning !== undefined) warnings.push(table.warning);
  checkShape(r, engine, err, table?.table);
  throwIfAny(errors);
  return {
    name: r.name ?? stem,
    file,
    engine,
    engineAsWritten: r.engine,
    ...(r.engine_version !== undefined && { engineVersion: r.engine_version }),
    ...(table !== undefined && { optionsChecked: table.said }),
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
    readiness: { timeoutS: r.readiness.timeout_s, proofs: r.readiness.proofs, ...(r.readiness.max_model_len !== undefined && { maxModelLen: r.readiness.max_model_len }) },
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
    warnings,
  };
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
  return { ...(m.weights_gb !== undefined && { weightsBytes: Math.round(m.weights_gb * 1e9) }), shape, ...(m.overhead_gib !== undefined && { overheadGiB: m.overhead_gib }) };
}
type Err = (path: FieldPath, problem: string, fix: string) => void;

/** Rules across fields: which engine goes with which target and which fields each needs. */
function checkShape(r: Raw, engine: EngineName, err: Err, table: OptionTable | undefined): void {
  const driver = driverFor(engine);
  for (const p of driver.recipeProblems(r)) err(p.field, p.problem, p.fix);
  if (r.deploy === "docker" && r.image === undefined) err(["image"], 'deploy = "docker" needs an image', 'add image = "<registry>/<name>:<tag>"');
  const program = r.entrypoint?.[0];
  if (program !== undefined && (program === "" || program.startsWith("-"))) {
    err(["entrypoint", 0], program === "" ? "the program is empty" : `the program "${program}" starts with "-", so docker and exec would read it as an option`, 'start the entrypoint with the program, e.g. ["vllm", "serve"]');
  }
  if (r.deploy === "script" && r.profiles_dir === undefined) err(["profiles_dir"], 'deploy = "script" needs its profiles', 'add profiles_dir = "<recipe>/profiles"');
  if (r.deploy !== "script" && r.profiles_dir !== undefined) err(["profiles_dir"], 'profiles belong to deploy = "script" recipes', "remove profiles_dir");
  if (r.deploy !== "docker" && r.deploy !== "script" && r.mounts.length > 0) err(["mounts"], `mounts apply to container targets, not "${r.deploy}"`, "remove mounts");
  // The check computes its problems lazily: past the error cap, stop reading (10,000 typos cost nothing).
  let shown = 0;
  for (const p of driver.checkArgs(r.args, table)) {
    if (++shown > MAX_ERRORS + 1) break;
    err(["args", p.index], p.problem, p.fix);
  }
  for (const k of ["HF_TOKEN", "API_KEY"]) {
    if (k in r.env) err(["env", k], `${k} is a secret and a recipe is plain text`, `set it with \`pulumi config set --secret sm121:${k === "HF_TOKEN" ? "hfToken" : "apiKey"}\` or keep it in the node .env`);
  }
}

/** Every `*.toml` of a recipes directory, by name; all errors of all files at once. */
export function loadRecipes(dir: string, display: string = dir): Map<string, Recipe> {
  const out = new Map<string, Recipe>();
  const errors: SpecError[] = [];
  for (const f of readdirSync(dir).filter((n) => n.endsWith(".toml")).sort()) {
    collectErrors(errors, () => {
      const text = readFileSync(join(dir, f), "utf8");
      const r = parseRecipe(join(display, f), text);
      const first = out.get(r.name);
      if (first !== undefined) throw new SpecError({ file: r.file, ...locateToml(text, ["name"]), field: "name", problem: `recipe name "${r.name}" is already used by ${first.file}`, fix: "give each recipe its own name" });
      out.set(r.name, r);
    });
  }
  throwIfAny(errors);
  return out;
}
