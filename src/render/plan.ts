/**
 * The plan of one deployment as the operator reads it in `pulumi preview --diff`: one fact per
 * line (the image, each engine flag, each env and .env key, each written file with its sha256
 * prefix, the readiness, the identity), facts shared by every node once, the others under the
 * node's name. Pulumi diffs a multi-line string line by line and shows only the changed lines with
 * two lines of context, so a changed flag reads as `- --max-model-len 32768` / `+ ... 16384`,
 * whole, and the scripts that follow from these facts never show. Pure; no secret value appears
 * (a key of SECRET_KEYS, and a key or value that looks secret, shows as `(secret)`).
 */
import { isSecretKey } from "./keys";
import { quoteArgv } from "../text/shell";
import { looksSecret } from "../text/secrets";
import { endpointKey } from "../engines";
import { msg, say, type Msg } from "../text/messages";
import type { DeploymentBundle, NodeBundle, Readiness } from "./types";
import type { RunOverrides } from "./overrides";
import type { RecipeGate } from "../recipe/gate";

/**
 * What a deployment's endpoint does when sm121:apiKey is set and it does not take the key from
 * sm121 (engines endpointKey): one rule for every engine, said by the plan (a line of its own) and
 * by the up's warnings. Undefined when the engine is started with the key.
 */
export function keyNote(b: DeploymentBundle): Msg | undefined {
  const key = endpointKey(b);
  if (key === "sm121") return undefined;
  if (key === "node") return msg("state.warn.scriptApiKey", { recipe: b.recipe });
  const url = b.nodes.find((n) => n.api !== undefined)?.api?.url ?? "-";
  return msg("state.warn.noKey", { engine: b.engine, deployment: b.deployment, url });
}

/** The readiness wait as its parts: "1800 s + 300 s grace" (readiness.timeout_s, sm121:readyGraceS). */
export function waitWords(r: Readiness): string {
  const grace = r.graceS ?? 0;
  return grace > 0 ? `${r.timeoutS - grace} s + ${grace} s grace` : `${r.timeoutS} s`;
}

/** A value as one line: shell-quoted as in the launch line when it needs it, newlines spelled out. */
function shown(value: string): string {
  return quoteArgv([value.replace(/\r?\n/g, "\\n")]);
}

/**
 * `KEY=value`, the value masked for a key of sm121's secrets and for any key or value that looks
 * secret (text/secrets): a change of it shows in the sha256 of the file that holds it.
 */
function keyLine(kind: string, key: string, value: string): string {
  return `${kind} ${key}=${isSecretKey(key) || looksSecret(key, value) ? "(secret)" : shown(value)}`;
}

/**
 * Whether a bundle carries a value that must not rest in plain state: an env or `.env` value of a
 * key that is or looks secret (the rule of keyLine). The resources then keep it as a Pulumi secret.
 */
export function holdsSecrets(b: DeploymentBundle): boolean {
  const secretIn = (r: Record<string, string>) =>
    Object.entries(r).some(([k, v]) => isSecretKey(k) || looksSecret(k, v));
  return b.nodes.some((n) => secretIn(n.env) || secretIn(n.envKeys ?? {}));
}

/**
 * An argv as the command (the words before the first `--` option) and one line per option with
 * its value: `--max-model-len 32768`, `--enable-prefix-caching`, `--config=x.yaml`.
 */
export function argvFacts(argv: readonly string[]): string[] {
  const first = argv.findIndex((a) => a.startsWith("--"));
  const command = first < 0 ? argv : argv.slice(0, first);
  const facts = command.length > 0 ? [`command ${command.map(shown).join(" ")}`] : [];
  for (let i = first < 0 ? argv.length : first; i < argv.length; i++) {
    const a = argv[i] ?? "";
    const next = argv[i + 1];
    if (!a.startsWith("--")) facts.push(`arg ${shown(a)}`);
    else if (a.includes("=") || next === undefined || next.startsWith("--")) facts.push(a);
    else {
      facts.push(`${a} ${shown(next)}`);
      i++;
    }
  }
  return facts;
}

/** What one node runs and writes, as facts without the node's name. */
function nodeFacts(n: NodeBundle): string[] {
  return [
    ...(n.image !== undefined ? [`image ${n.image}`] : []),
    ...(n.fabric ?? []),
    ...argvFacts(n.argv),
    ...Object.entries(n.env).map(([k, v]) => keyLine("env", k, v)),
    ...Object.entries(n.envKeys ?? {}).map(([k, v]) => keyLine(".env", k, v)),
    ...n.files.map((f) => `file ${f.path} sha256 ${f.sha256.slice(0, 12)}`),
    ...(n.api !== undefined ? [`api ${n.api.url}`] : []),
  ];
}

export interface PlanOptions {
  /** SM121_RESTART=1 for this run. */
  restart?: boolean;
  /** sm121:apiKey is set: a deployment whose endpoint does not take it says so (keyNote). */
  apiKey?: boolean;
  /** SM121_TIMEOUT_S and SM121_MIN_MEM_GIB of this run. */
  overrides?: RunOverrides;
}

/** The plan's lines for the overrides of this run: what it does instead of what the bundle says. */
function overrideLines(b: DeploymentBundle, o: RunOverrides): string[] {
  const lines: string[] = [];
  if (o.timeoutS !== undefined) {
    const declared = waitWords(b.readiness);
    lines.push(`SM121_TIMEOUT_S=${o.timeoutS}: this run waits ${o.timeoutS} s for /v1/models (not ${declared})`);
  }
  if (o.minMemGiB !== undefined) {
    const gates = [...new Set(b.nodes.map((n) => n.memGateGiB))];
    const each = b.nodes.map((n) => `${n.node} ${n.memGateGiB} GiB`).join(", ");
    const declared = gates.length === 1 ? `${gates[0]} GiB` : each;
    const gate = `${o.minMemGiB} GiB on every node`;
    lines.push(`SM121_MIN_MEM_GIB=${o.minMemGiB}: this run's memory gate is ${gate} (not ${declared})`);
  }
  return lines;
}

/** The gate's line of the plan: its load and its limits against the baseline the state records. */
export function gateLine(g: RecipeGate): string {
  const load = `${g.requests} requests, ${g.concurrency} at once, ${g.promptTokens}-word prompts`;
  const each = `${g.maxTokens} tokens each`;
  const tokens = `tokens/s at least ${fixed(1 - g.tokensPerSTolerance)} x`;
  const limits = `${tokens}, first token at most ${fixed(1 + g.ttftTolerance)} x`;
  return `gate after a restart of its first replica: ${load}, ${each}; ${limits} the baseline`;
}

const fixed = (v: number) => String(Math.round(v * 1000) / 1000);

/** The plan text of a deployment: what it runs on which node, one fact a line. */
export function deploymentPlan(b: DeploymentBundle, o: PlanOptions = {}): string {
  const what = [`${b.engine} on ${b.deploy}, recipe ${b.recipe} (${b.recipeFile})`];
  if (b.profile !== undefined) what.push(`profile ${b.profile} (${b.profileStatus ?? "stable"})`);
  if (b.overlay !== undefined) what.push(`overlay ${b.overlay}`);
  const group = b.nodes.map(
    (n) => `${n.node} (rank ${n.rank}${n.runs ? "" : ", no engine process"}${n.protected ? ", protected" : ""})`,
  );
  const lines = [
    what.join(", "),
    `serves on ${group.join(", ")}${b.nodes.length > 1 ? " as one group (stopped and started together)" : ""}`,
  ];
  // Facts every node shares are stated once; the rest under the node's name.
  const per = b.nodes.map(nodeFacts);
  const shared = (per[0] ?? []).filter((f) => per.every((p) => p.includes(f)));
  lines.push(...shared);
  if (b.nodes.length > 1)
    b.nodes.forEach((n, i) =>
      lines.push(...(per[i] ?? []).filter((f) => !shared.includes(f)).map((f) => `${n.node} ${f}`)),
    );
  const r = b.readiness;
  if (b.optionsChecked !== undefined) lines.push(`args checked against ${b.optionsChecked}`);
  const served = r.servedName === undefined ? "" : ` with ${r.servedName}`;
  const len = r.maxModelLen === undefined ? "" : `, max_model_len ${r.maxModelLen}`;
  lines.push(`ready when /v1/models answers within ${waitWords(r)}${served}${len}`);
  for (const p of r.proofs) lines.push(`proof in the engine log ${shown(p)}`);
  if (b.gate !== undefined) lines.push(gateLine(b.gate));
  for (const h of b.hooks.beforeServe) lines.push(`before_serve ${shown(h)}`);
  for (const h of b.hooks.afterStop) lines.push(`after_stop ${shown(h)}`);
  if (b.linkTest !== undefined) {
    const min = b.linkTest.minBusBandwidthGBps;
    const fails = [
      ...(b.linkTest.rdma ? ["on NET/Socket"] : []),
      ...(min === undefined ? [] : [`under ${min} GB/s busbw`]),
    ];
    const between = b.nodes.map((n) => n.node).join(", ");
    lines.push(
      `link test before a start (sm121:fabricCheck), all-reduce between ${between}` +
        (fails.length > 0 ? `: fails ${fails.join(", ")}` : ""),
    );
    lines.push(
      b.linkTest.mpi === undefined
        ? "link test tool: sm121's torch all-reduce script (no image to look in for nccl-tests)"
        : "link test tool: nccl-tests' all_reduce_perf under mpirun where the image has it, mpirun and ssh " +
            "(the up looks), else sm121's torch all-reduce script",
    );
  }
  const note = o.apiKey === true ? keyNote(b) : undefined;
  if (note !== undefined) lines.push(`api key: ${say(note, "en")}`);
  if (b.rollback === "auto") lines.push("rollback auto (a failed readiness restores the previous bundle)");
  if (o.restart === true) lines.push("SM121_RESTART=1 restarts it although nothing changed");
  lines.push(...overrideLines(b, o.overrides ?? {}));
  lines.push(`bundle sha256 ${b.identity.slice(0, 12)} (the diff key)`);
  return `${lines.join("\n")}\n`;
}
