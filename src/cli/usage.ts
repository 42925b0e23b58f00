/**
 * The verbs' flags and their usage text, from one table: the parser's spec and the help that
 * `sm121 --help`, `sm121 <verb> --help` and every usage error print come from the same entries,
 * so the usage cannot name a flag the parser refuses, or miss one it takes.
 */
import type { FlagKind, FlagSpec } from "./args";
import { LOCALES } from "../text/messages";

export interface FlagHelp {
  kind: FlagKind;
  /** The value's name in the usage (`--node N`). */
  value?: string;
  help: string;
}

export interface VerbHelp {
  /** Positional arguments, as the usage shows them (`<deployment>`, `[recipe]`). */
  args: string;
  summary: string;
  flags: Record<string, FlagHelp>;
}

const stack: FlagHelp = { kind: "string", value: "S", help: "the stack (default: $SM121_STACK, else $PULUMI_STACK, else the stack selected with `pulumi stack select`, else spark-site); its configuration as the Pulumi CLI resolves it, else Pulumi.<S>.yaml when there is no Pulumi CLI" };
const lang: FlagHelp = { kind: "string", value: "L", help: `the language of messages: ${LOCALES.join(", ")} (default: $SM121_LANG, else $LC_ALL / $LC_MESSAGES / $LANG)` };
const help: FlagHelp = { kind: "bool", help: "print this verb's usage" };
const identity: FlagHelp = { kind: "string", value: "FILE", help: "the private key (default: $SM121_SSH_KEY, else ssh-agent, else ~/.ssh/id_ed25519 or id_rsa)" };
const json: FlagHelp = { kind: "bool", help: "print the report as JSON (schemas in src/cli/schemas.ts)" };
const node: FlagHelp = { kind: "string", value: "N", help: "only this node" };
const yes: FlagHelp = { kind: "bool", help: "allow a protected node: an HTTP request (status, smoke, bench) or a GPU probe" };

/** Flags every verb takes. */
const COMMON = { stack, lang, help };
/** Flags of the verbs that reach the nodes over ssh (host keys checked against the site's knownHosts). */
const SSH = { ...COMMON, identity };

export const VERBS = {
  init: {
    args: "",
    summary: "write Pulumi.<stack>.yaml for your own nodes: host keys shown and confirmed, " +
      "each node looked at over ssh; never overwrites",
    flags: {
      nodes: { kind: "string", value: "H1,H2", help: "the nodes' host names or addresses, comma-separated" },
      user: { kind: "string", value: "U", help: "the ssh user on every node (default: your user name)" },
      port: { kind: "number", value: "P", help: "the ssh port of every node (default 22)" },
      yes: { kind: "bool", help: "record the host keys without asking (scripts: check the fingerprints it prints)" },
      "known-hosts": {
        kind: "string",
        value: "FILE",
        help: "where the host keys go, and what sm121:knownHosts names (default ~/.ssh/known_hosts)",
      },
      gateway: { kind: "bool", help: "also write a gateway file (sm121:gateway, LiteLLM format); off by default" },
      stack: { kind: "string", value: "S", help: "the stack to write, Pulumi.<S>.yaml (default: sparks)" },
      identity,
      lang,
      help,
    },
  },
  validate: {
    args: "",
    summary: "check every recipe, every profile (deployed or not) and the site; exit 1 on any error",
    flags: { ...COMMON, json },
  },
  profiles: {
    args: "[recipe]",
    summary: "the profiles of the script recipes (status, runnable, description) and the nodes",
    flags: { ...COMMON, json },
  },
  render: {
    args: "<deployment>",
    summary: "each node's bundle and every script `pulumi up` runs there, without touching a node",
    flags: {
      ...COMMON,
      node,
      step: { kind: "string", value: "NAME", help: "only this step: preflight, stop, memory-gate, write, start, readiness or verify" },
      json,
      out: { kind: "string", value: "DIR", help: "write a publishable bundle under DIR instead" },
    },
  },
  status: {
    args: "",
    summary:
      "per node of every deployment: state, profile, drift, health (/v1/models), KV cache, load (/metrics), " +
      "memory, GPU apps",
    flags: {
      ...SSH,
      node,
      json,
      watch: {
        kind: "bool",
        help: "draw the load table again after every interval, in the terminal's width, until Ctrl-C",
      },
      interval: {
        kind: "number",
        value: "S",
        help: "seconds between the two reads of each engine's /metrics that tokens/s is measured over (default 2)",
      },
      "no-http": { kind: "bool", help: "send no request to any engine's API" },
      "gpu-probe": { kind: "bool", help: "also run each node's gpuProbe command (a protected node needs --yes)" },
      yes,
      verbose: { kind: "bool", help: "also print the raw @sm121 records of the node scripts (on stderr)" },
    },
  },
  smoke: {
    args: "[deployment]",
    summary: "one short chat completion on the deployment's endpoint (curl on its node); " +
      "the only deployment's API node unless named",
    flags: { ...SSH, node, yes, json },
  },
  logs: {
    args: "<deployment>",
    summary: "the engine log of every node, each line prefixed with the node",
    flags: { ...SSH, node, lines: { kind: "number", value: "N", help: "the last N lines (default 100)" }, follow: { kind: "bool", help: "stream until Ctrl-C" } },
  },
  bench: {
    args: "[deployment]",
    summary: "a streaming chat load from this machine: TTFT, ITL, tokens/s, req/s",
    flags: {
      ...SSH,
      concurrency: { kind: "number", value: "C", help: "requests in flight (default 8)" },
      requests: { kind: "number", value: "N", help: "requests in all (default 100)" },
      rate: { kind: "number", value: "R", help: "start at most R requests a second (default: each worker at once)" },
      "prompt-tokens": { kind: "number", value: "P", help: "prompt length in tokens, about (default 128)" },
      "max-tokens": { kind: "number", value: "M", help: "max_tokens of each request (default 128)" },
      model: { kind: "string", value: "NAME", help: "the model to ask for (default: the served name, else the first of /v1/models)" },
      url: { kind: "string", value: "URL[,URL]", help: "OpenAI endpoints instead of a deployment" },
      node,
      yes,
      json,
    },
  },
  doctor: {
    args: "",
    summary: "what each node needs for its deployments; exit 1 on any problem",
    flags: {
      ...SSH,
      node,
      fabric: {
        kind: "string",
        value: "DEPLOYMENT",
        help: "instead: the link test, an NCCL all-reduce between the deployment's nodes in its own image; " +
          "transport and bus bandwidth, exit 1 on Socket where RDMA is declared " +
          "or under sm121:fabric.minBusBandwidthGBps",
      },
      json,
    },
  },
  down: {
    args: "<deployment>",
    summary: "stop one deployment on all its nodes (a targeted `pulumi destroy`); a protected node needs SM121_ALLOW_PROTECTED=<node>",
    flags: { ...COMMON },
  },
} satisfies Record<string, VerbHelp>;

export type Verb = keyof typeof VERBS;

export function isVerb(name: string): name is Verb {
  return Object.hasOwn(VERBS, name);
}

/** The parser's spec of a verb. */
export function flagSpec(verb: Verb): FlagSpec {
  const flags: Record<string, FlagHelp> = VERBS[verb].flags;
  return Object.fromEntries(Object.entries(flags).map(([k, f]) => [k, f.kind]));
}

const flagWord = (name: string, f: FlagHelp) => `--${name}${f.value === undefined ? "" : ` ${f.value}`}`;

/** `sm121 <verb> --help`, and what a usage error of the verb shows. */
export function verbUsage(verb: Verb): string {
  const v: VerbHelp = VERBS[verb];
  const rows = Object.entries(v.flags).map(([k, f]) => [flagWord(k, f), f.help] as const);
  const width = Math.max(...rows.map(([w]) => w.length));
  return [`usage: sm121 ${verb}${v.args === "" ? "" : ` ${v.args}`} [options]`, `  ${v.summary}`, "", "options:", ...rows.map(([w, h]) => `  ${w.padEnd(width)}  ${h}`), ""].join("\n");
}

/** `sm121 --help`: every verb with its own flags (the common ones once, at the end). */
export function usage(): string {
  const common = new Set(Object.keys(SSH));
  const lines = ["usage: sm121 <command> [options]", "", "commands:"];
  for (const [name, v] of Object.entries(VERBS) as Array<[Verb, VerbHelp]>) {
    lines.push(`  ${`${name} ${v.args}`.trimEnd().padEnd(28)} ${v.summary}`);
    const own = Object.entries(v.flags).filter(([k]) => !common.has(k)).map(([k, f]) => flagWord(k, f));
    if (own.length > 0) lines.push(`      ${own.join("  ")}`);
  }
  lines.push("", "common options:");
  for (const [k, f] of Object.entries(SSH)) lines.push(`  ${flagWord(k, f).padEnd(28)} ${f.help}${k === "identity" ? " (verbs that reach the nodes)" : ""}`);
  lines.push("", "`sm121 <command> --help` shows a command's options.", "");
  return lines.join("\n");
}
