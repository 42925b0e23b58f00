/**
 * The site: nodes and deployments, in the stack's configuration under the `sm121:` namespace (the
 * stack file `Pulumi.<stack>.yaml`, or wherever Pulumi resolves it from: see siteSource.ts). The
 * Pulumi program and the CLI read it with this one schema.
 */
import { readFileSync } from "node:fs";
import { z } from "zod";
import { MAX_ERRORS, SpecError, throwIfAny } from "./errors";
import { nodeFabricSchema, siteFabricSchema } from "./fabric";
import { issueToSpecError, keysAt } from "./issues";
import { dotted, protoKeys, type FieldPath } from "./locate";
import { SECRET_CONFIG_KEYS, stackFileSource, type SiteSource } from "./siteSource";
import { LIVENESS_DEFAULTS, type NodeEnvKey, type Site, type SiteNode } from "./types";

const IDENT = /^[a-z0-9][a-z0-9-]{0,47}$/;
const HOSTNAME = /^[A-Za-z0-9][A-Za-z0-9.-]{0,252}$|^\[?[0-9a-fA-F:]+\]?$/;
const IPV4 = /^(25[0-5]|2[0-4]\d|1?\d?\d)(\.(25[0-5]|2[0-4]\d|1?\d?\d)){3}$/;
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
function flag() {
  return z.preprocess((v) => (v === "true" ? true : v === "false" ? false : v), z.boolean());
}

function siteSchema() {
  const ident = (what: string) => z.string().regex(IDENT, { error: `${what} must be lower-case letters, digits and -, at most 48; rename it` });
  const path = (what: string) =>
    z.string().regex(PATH, { error: `${what} may contain only letters, digits and ~ @ : / . _ + -; remove spaces, quotes and shell characters` })
      .refine((s) => !s.split("/").includes(".."), { error: `${what} contains a ".." segment; use a path without ..` })
      .refine((s) => !s.startsWith("-"), { error: `${what} starts with "-"; a leading dash would be read as a flag` })
      .refine((s) => !/^~[^/]/.test(s), { error: `${what} starts with ~user, which the node does not expand; write ~/ for the node user's home or an absolute path` });
  const relative = (what: string, base: string, example: string) =>
    path(what).refine((s) => !s.startsWith("/") && !s.startsWith("~"), { error: `${what} is relative to ${base}; write e.g. ${example}` });
  const value = (what: string) => z.union([z.string(), z.number(), z.boolean()]).transform(String)
    .refine((s) => SAFE_VALUE.test(s), { error: `${what} may contain only letters, digits and _ . / : = , @ + % -; remove spaces, quotes and shell characters` });
  const vars = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: "a var name is letters, digits and _; rename it" }), value("a var value")).default({});
  const nodeRecipe = z.strictObject({
    dir: path("dir"),
    start: relative("start", "the recipe dir", "start.sh").default("start.sh"),
    stop: relative("stop", "the recipe dir", "stop.sh").default("stop.sh"),
    container: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/, { error: "is not a container name; use letters, digits, _ . -" }),
    dockerArgs: z.string().regex(/^[A-Za-z0-9_./:=,@+% -]*$/, { error: "may hold only words of letters, digits and _ . / : = , @ + % - separated by spaces; remove quotes and shell characters (docker arguments reach a generated bash script unquoted)" }).optional(),
    vars,
    ownedMounts: z.array(path("an owned mount").refine((s) => s.startsWith("/"), { error: "an owned mount is a container path; write an absolute path such as /workspace/mtp.py" })).default([]),
  });
  const node = z.strictObject({
    host: z.enum(["local", "ssh"]).default("ssh"),
    ssh: z.strictObject({
      host: z.string().regex(HOSTNAME, { error: "is not a host name or address; write e.g. spark2 or 203.0.113.12" }),
      port: int().pipe(z.int().min(1).max(65535)).default(22),
      user: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, { error: "is not a user name; write e.g. ops" }),
    }).optional(),
    ip: z.string().regex(IPV4, { error: "is not an IPv4 address; write the node's address on the cluster network, e.g. 203.0.113.12" }),
    protected: flag().default(false),
    env: z.strictObject({
      // A node path: `~/` is the node user's home, expanded on the node.
      HF_HOME: z.union([z.string(), z.number(), z.boolean()]).transform(String)
        .refine((s) => /^~?[A-Za-z0-9_./:=,@+%-]*$/.test(s), {
          error: "HF_HOME may contain only letters, digits and _ . / : = , @ + % - after a leading ~; " +
            "remove spaces, quotes and shell characters",
        })
        .refine((s) => s.startsWith("/") || s === "~" || s.startsWith("~/"), {
          error: "HF_HOME is neither an absolute path nor ~/...; write the node's Hugging Face cache, " +
            "e.g. ~/.cache/huggingface (the node expands ~) or /home/ops/.cache/huggingface",
        }),
      BIND: value("a node env value").refine((s) => IPV4.test(s), { error: "BIND is not an IPv4 address; write the address the server binds, e.g. 127.0.0.1 or 0.0.0.0" }),
      PORT: value("a node env value").refine((s) => /^\d{1,5}$/.test(s) && Number(s) >= 1 && Number(s) <= 65535, { error: "PORT is not a TCP port; write a number from 1 to 65535, e.g. 8000" }),
      REQUIRE_IDLE_GPU: value("a node env value"),
    } satisfies Record<NodeEnvKey, z.ZodType>).partial().default({}),
    vars,
    // The printable check comes first: z.url() drops a newline from what it returns instead of refusing it.
    gatewayUrl: z.string().regex(/^[\x21-\x7e]+$/, { error: "contains white space, a control character or a non-ASCII character; write the URL without them (e.g. http://203.0.113.12:8000)" })
      .pipe(z.url({ protocol: /^https?$/, error: "is not a URL; write e.g. http://203.0.113.12:8000" })).optional(),
    gpuProbe: z.string().min(1).refine(commandLine, { error: "is one command line; remove line breaks, NUL and other control or invisible characters" }).optional(),
    minMemAvailableGiB: num().pipe(z.number().positive()).optional(),
    recipes: z.record(ident("a node recipe name"), nodeRecipe).default({}),
    stateDir: path("stateDir").default("~/.sm121"),
    fabric: nodeFabricSchema().optional(),
    gpus: int().pipe(z.int().min(1).max(64)).default(1),
  });
  const deployment = z.strictObject({
    name: ident("name").optional(),
    recipe: ident("recipe"),
    profile: ident("profile").optional(),
    nodes: z.array(ident("a node name"))
      .min(1, { error: "a deployment needs at least one node; list the nodes, rank 0 first" }).optional(),
    // One node group per replica: rendered as one deployment per group, named <name>-1, <name>-2, ...
    replicas: z.array(z.array(ident("a node name"))
      .min(1, { error: "a replica needs at least one node; list its nodes, rank 0 first" }))
      .min(1, { error: "replicas needs at least one node group; write e.g. replicas: [[spark1], [spark2]]" })
      .optional(),
    roll: z.enum(["one", "all"]).optional(),
    overlay: relative("overlay", "the project directory", "overlays/qwen38/mtp-r3").optional(),
    overlayWins: flag().default(false),
  }).superRefine((d, ctx) => {
    // Either form names the nodes; without both, the missing key is nodes, reported as zod reports one.
    if (d.nodes !== undefined || d.replicas !== undefined) return;
    ctx.addIssue({ code: "invalid_type", expected: "array", input: undefined, path: ["nodes"] });
  });
  // A bad value names its range: "sm121:liveness.timeout: 0 is out of range; use 1 to 600 s".
  const ranged = (what: string, min: number, max: number, unit: string) => {
    const range = `use ${min} to ${max}${unit}`;
    const wholeNumber = z.int({ error: `${what} is not a whole number; ${range}` });
    const asNumber = (v: unknown) => (typeof v === "string" && /^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v);
    const inRange = wholeNumber
      .min(min, { error: `${what} is below ${min}; ${range}` })
      .max(max, { error: `${what} is above ${max}; ${range}` });
    return z.preprocess(asNumber, inRange);
  };
  const liveness = z.strictObject({
    timeout: ranged("timeout", 1, 600, " s").default(LIVENESS_DEFAULTS.timeoutS),
    maxRestarts: ranged("maxRestarts", 0, 100, " restarts").default(LIVENESS_DEFAULTS.maxRestarts),
    windowS: ranged("windowS", 60, 604_800, " s (one week)").default(LIVENESS_DEFAULTS.windowS),
  });
  return z.strictObject({
    nodes: z.record(ident("a node name"), node),
    deployments: z.array(deployment).default([]),
    minMemAvailableGiB: num().pipe(z.number().positive()).default(100),
    memTimeoutS: int().pipe(z.int().positive()).default(600),
    readyGraceS: int().pipe(z.int().min(0)).default(300),
    recipesDir: relative("recipesDir", "the project directory", "recipes").default("recipes"),
    knownHosts: path("knownHosts").default("~/.ssh/known_hosts"),
    hostKeys: z.enum(["strict", "accept-new"]).default("strict"),
    gateway: z.strictObject({
      path: path("path"),
      format: z.enum(["sm121", "litellm", "llama-swap"]).default("sm121"),
      model: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._/:-]{0,127}$/, { error: "may contain only letters, digits and . _ / : -; write the served model name, e.g. qwen38" }).optional(),
      node: ident("node").optional(),
    }).optional(),
    scrapeTargets: z.strictObject({
      path: path("path").refine((s) => s.endsWith(".json"), {
        error: "path does not end in .json: Prometheus' file_sd reads a file by its extension, and sm121 writes "
          + "JSON; write e.g. ~/prometheus/sm121.json",
      }),
      node: ident("node").optional(),
    }).optional(),
    rollback: z.enum(["off", "auto"]).default("off"),
    dgppPollS: num().pipe(z.number().positive().max(300)).default(30),
    preflight: flag().default(false),
    lockWaitS: int().pipe(z.int().min(0).max(3600)).default(60),
    keepBackups: int().pipe(z.int().min(1).max(100)).default(3),
    hooks: z.enum(["engine", "pulumi-command"]).default("engine"),
    modelCache: z.enum(["off", "keep", "remove"]).default("off"),
    imageSync: flag().default(false),
    fabric: siteFabricSchema(),
    fabricCheck: flag().default(false),
    liveness: liveness.default({
      timeout: LIVENESS_DEFAULTS.timeoutS,
      maxRestarts: LIVENESS_DEFAULTS.maxRestarts,
      windowS: LIVENESS_DEFAULTS.windowS,
    }),
  });
}

/** Parses the stack config text of `Pulumi.<stack>.yaml`. Throws SpecError or SpecErrors. */
export function parseSite(file: string, stack: string, text: string): Site {
  return siteFrom(stackFileSource({ file, text }), stack);
}

/** The site of a stack from its source (the stack file, or Pulumi's resolved configuration). Throws SpecError or SpecErrors. */
export function siteFrom(source: SiteSource, stack: string): Site {
  const { file, raw, locate } = source;
  throwIfAny(protoKeys(raw).map((p) => new SpecError({ ...locate(p), field: `sm121:${dotted(p)}`, problem: "__proto__ is not a name sm121 accepts", fix: "rename the key" })));
  const schema = siteSchema();
  const parsed = schema.safeParse(raw, { reportInput: true });
  if (!parsed.success) {
    // The secrets are config keys too, read through Pulumi rather than this schema.
    const knownKeys = (p: FieldPath) => (p.length === 0 ? [...keysAt(schema, p), ...SECRET_CONFIG_KEYS] : keysAt(schema, p));
    throwIfAny(parsed.error.issues.slice(0, MAX_ERRORS + 1).flatMap((i) => issueToSpecError(i, file, locate, knownKeys, "sm121:")));
    throw new Error("unreachable: zod failed without issues");
  }
  const s = parsed.data;
  const errors: SpecError[] = [];
  const err = (path: FieldPath, problem: string, fix: string) => {
    if (errors.length <= MAX_ERRORS) errors.push(new SpecError({ ...locate(path), field: `sm121:${dotted(path)}`, problem, fix }));
  };
  const nodes: Record<string, SiteNode> = {};
  for (const [name, n] of Object.entries(s.nodes)) {
    if (n.host === "ssh" && n.ssh === undefined) err(["nodes", name, "host"], "host: ssh needs an ssh block", "add ssh: {host: <name or address>, user: <user>}");
    nodes[name] = {
      name,
      host: n.host,
      ...(n.ssh !== undefined && { ssh: n.ssh }),
      ip: n.ip,
      protected: n.protected,
      env: n.env,
      vars: n.vars,
      ...(n.gatewayUrl !== undefined && { gatewayUrl: n.gatewayUrl }),
      ...(n.gpuProbe !== undefined && { gpuProbe: n.gpuProbe }),
      ...(n.minMemAvailableGiB !== undefined && { minMemAvailableGiB: n.minMemAvailableGiB }),
      recipes: n.recipes,
      stateDir: n.stateDir,
      ...(n.fabric !== undefined && { fabric: n.fabric }),
      gpus: n.gpus,
    };
  }
  const deployments = s.deployments.flatMap((d, i) => {
    const base = d.name ?? (d.profile === undefined ? d.recipe : `${d.recipe}-${d.profile}`);
    if (d.nodes !== undefined && d.replicas !== undefined) {
      const fix = "write nodes: [spark1] for one serving group, " +
        "or replicas: [[spark1], [spark2]] for one per node group";
      err(["deployments", i], "a deployment has either nodes or replicas, not both", fix);
      return [];
    }
    const groups = d.replicas ?? [d.nodes ?? []];
    const owner = new Map<string, number>();
    return groups.map((nodeList, r) => {
      const nodesAt = d.replicas === undefined ? ["deployments", i, "nodes"] : ["deployments", i, "replicas", r];
      for (const [j, n] of nodeList.entries()) {
        const at = [...nodesAt, j];
        const known = `add it to sm121:nodes or use one of ${Object.keys(nodes).join(", ")}`;
        if (!Object.hasOwn(nodes, n)) err(at, `node "${n}" is not in sm121:nodes`, known);
        if (nodeList.indexOf(n) !== j) err(at, `node "${n}" is listed twice`, "list each node once, rank 0 first");
        const other = owner.get(n);
        if (other !== undefined && other !== r) {
          const fix = "put each replica on nodes of its own: a replica that shares a node with another stops with it";
          err(at, `node "${n}" is in replicas ${other + 1} and ${r + 1} of ${base}`, fix);
        }
        owner.set(n, r);
      }
      const name = d.replicas === undefined ? base : `${base}-${r + 1}`;
      return {
        name, recipe: d.recipe, nodes: nodeList, overlayWins: d.overlayWins,
        at: { entry: ["deployments", i], nodes: nodesAt },
        ...(d.replicas !== undefined && { replicaOf: base }),
        ...(d.roll !== undefined && { roll: d.roll }),
        ...(d.profile !== undefined && { profile: d.profile }),
        ...(d.overlay !== undefined && { overlay: d.overlay }),
      };
    });
  });
  const seen = new Map<string, number>();
  for (const d of deployments) {
    const i = Number(d.at.entry[1]);
    const prev = seen.get(d.name);
    const used = `deployment name "${d.name}" is already used by deployments[${prev ?? 0}]`;
    if (prev !== undefined) err(d.at.entry, used, "set name: on one of them to a distinct name");
    seen.set(d.name, i);
  }
  if (s.gateway?.node !== undefined && !Object.hasOwn(nodes, s.gateway.node)) err(["gateway", "node"], `node "${s.gateway.node}" is not in sm121:nodes`, "name a node of the site, or remove node to write the file on the machine that runs Pulumi");
  const scrapeNode = s.scrapeTargets?.node;
  if (scrapeNode !== undefined && !Object.hasOwn(nodes, scrapeNode)) {
    const fix = "name a node of the site, or remove node to write the file on the machine that runs Pulumi";
    err(["scrapeTargets", "node"], `node "${scrapeNode}" is not in sm121:nodes`, fix);
  }
  throwIfAny(errors);
  const site: Site = {
    file, locate, stack, nodes, deployments,
    minMemAvailableGiB: s.minMemAvailableGiB, memTimeoutS: s.memTimeoutS, readyGraceS: s.readyGraceS,
    recipesDir: s.recipesDir, knownHosts: s.knownHosts, hostKeys: s.hostKeys, rollback: s.rollback, dgppPollS: s.dgppPollS, preflight: s.preflight, lockWaitS: s.lockWaitS, hooks: s.hooks,
    keepBackups: s.keepBackups,
    modelCache: s.modelCache, imageSync: s.imageSync,
    fabric: { ...s.fabric, check: s.fabricCheck },
    liveness: { timeoutS: s.liveness.timeout, maxRestarts: s.liveness.maxRestarts, windowS: s.liveness.windowS },
    ...(s.gateway !== undefined && { gateway: s.gateway }),
    ...(s.scrapeTargets !== undefined && { scrapeTargets: s.scrapeTargets }),
  };
  return site;
}

export function readSite(path: string, stack: string, displayPath: string = path): Site {
  return parseSite(displayPath, stack, readFileSync(path, "utf8"));
}
