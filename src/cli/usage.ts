/**
 * The verbs' flags and their usage text, from one table: the parser's spec and the help that
 * `sm121 --help`, `sm121 <verb> --help` and every usage error print come from the same entries,
 * so the usage cannot name a flag the parser refuses, or miss one it takes. The texts are message
 * keys, said in the locale of the run (--lang, SM121_LANG, the locale).
 */
import type { FlagKind, FlagSpec } from "./args";
import { LOCALES, t, type MessageKey } from "../text/messages";

export interface FlagHelp {
  kind: FlagKind;
  /** The value's name in the usage (`--node N`). */
  value?: string;
  /** The flag's help, said in the locale of the run. */
  help: MessageKey;
}

export interface VerbHelp {
  /** Positional arguments, as the usage shows them (`<deployment>`, `[recipe]`). */
  args: string;
  summary: MessageKey;
  flags: Record<string, FlagHelp>;
}

const stack: FlagHelp = { kind: "string", value: "S", help: "usage.flag.stack" };
const lang: FlagHelp = { kind: "string", value: "L", help: "usage.flag.lang" };
const help: FlagHelp = { kind: "bool", help: "usage.flag.help" };
const identity: FlagHelp = { kind: "string", value: "FILE", help: "usage.flag.identity" };
const json: FlagHelp = { kind: "bool", help: "usage.flag.json" };
const node: FlagHelp = { kind: "string", value: "N", help: "usage.flag.node" };
const yes: FlagHelp = { kind: "bool", help: "usage.flag.yes" };
const diff: FlagHelp = { kind: "bool", help: "usage.flag.diff" };

/** Flags every verb takes. */
const COMMON = { stack, lang, help };
/** Flags of the verbs that reach the nodes over ssh (host keys checked against the site's knownHosts). */
const SSH = { ...COMMON, identity };

export const VERBS = {
  init: {
    args: "",
    summary: "usage.init.summary",
    flags: {
      nodes: { kind: "string", value: "H1,H2", help: "usage.init.nodes" },
      user: { kind: "string", value: "U", help: "usage.init.user" },
      port: { kind: "number", value: "P", help: "usage.init.port" },
      yes: { kind: "bool", help: "usage.init.yes" },
      "known-hosts": { kind: "string", value: "FILE", help: "usage.init.knownHosts" },
      gateway: { kind: "bool", help: "usage.init.gateway" },
      stack: { kind: "string", value: "S", help: "usage.init.stack" },
      identity,
      lang,
      help,
    },
  },
  preview: { args: "", summary: "usage.preview.summary", flags: { ...COMMON, diff } },
  up: { args: "", summary: "usage.up.summary", flags: { ...COMMON, diff } },
  refresh: { args: "", summary: "usage.refresh.summary", flags: { ...COMMON } },
  destroy: { args: "", summary: "usage.destroy.summary", flags: { ...COMMON } },
  validate: { args: "", summary: "usage.validate.summary", flags: { ...COMMON, json } },
  profiles: { args: "[recipe]", summary: "usage.profiles.summary", flags: { ...COMMON, json } },
  render: {
    args: "<deployment>",
    summary: "usage.render.summary",
    flags: {
      ...COMMON,
      node,
      step: { kind: "string", value: "NAME", help: "usage.render.step" },
      json,
      out: { kind: "string", value: "DIR", help: "usage.render.out" },
    },
  },
  status: {
    args: "",
    summary: "usage.status.summary",
    flags: {
      ...SSH,
      node,
      json,
      watch: { kind: "bool", help: "usage.status.watch" },
      interval: { kind: "number", value: "S", help: "usage.status.interval" },
      "no-http": { kind: "bool", help: "usage.status.noHttp" },
      "gpu-probe": { kind: "bool", help: "usage.status.gpuProbe" },
      yes,
      verbose: { kind: "bool", help: "usage.status.verbose" },
    },
  },
  smoke: { args: "[deployment]", summary: "usage.smoke.summary", flags: { ...SSH, node, yes, json } },
  logs: {
    args: "[deployment]",
    summary: "usage.logs.summary",
    flags: {
      ...SSH,
      node,
      lines: { kind: "number", value: "N", help: "usage.logs.lines" },
      follow: { kind: "bool", help: "usage.logs.follow" },
    },
  },
  bench: {
    args: "[deployment]",
    summary: "usage.bench.summary",
    flags: {
      ...SSH,
      concurrency: { kind: "number", value: "C", help: "usage.bench.concurrency" },
      requests: { kind: "number", value: "N", help: "usage.bench.requests" },
      rate: { kind: "number", value: "R", help: "usage.bench.rate" },
      "prompt-tokens": { kind: "number", value: "P", help: "usage.bench.promptTokens" },
      "max-tokens": { kind: "number", value: "M", help: "usage.bench.maxTokens" },
      model: { kind: "string", value: "NAME", help: "usage.bench.model" },
      url: { kind: "string", value: "URL[,URL]", help: "usage.bench.url" },
      node,
      yes,
      json,
    },
  },
  doctor: {
    args: "",
    summary: "usage.doctor.summary",
    flags: { ...SSH, node, fabric: { kind: "string", value: "DEPLOYMENT", help: "usage.doctor.fabric" }, json },
  },
  down: { args: "<deployment>", summary: "usage.down.summary", flags: { ...COMMON } },
  keep: {
    args: "",
    summary: "usage.keep.summary",
    flags: {
      ...SSH,
      once: { kind: "bool", help: "usage.keep.once" },
      interval: { kind: "number", value: "S", help: "usage.keep.interval" },
      log: { kind: "string", value: "FILE", help: "usage.keep.log" },
      unit: { kind: "bool", help: "usage.keep.unit" },
    },
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

/** A flag's help in the locale of the run. */
const helpOf = (f: FlagHelp): string => t(f.help, { locales: LOCALES.join(", ") });

/** `sm121 <verb> --help`, and what a usage error of the verb shows. */
export function verbUsage(verb: Verb): string {
  const v: VerbHelp = VERBS[verb];
  const rows = Object.entries(v.flags).map(([k, f]) => [flagWord(k, f), helpOf(f)] as const);
  const width = Math.max(...rows.map(([w]) => w.length));
  const head = t("usage.verbUsage", { verb: `${verb}${v.args === "" ? "" : ` ${v.args}`}` });
  const options = rows.map(([w, h]) => `  ${w.padEnd(width)}  ${h}`);
  return [head, `  ${t(v.summary)}`, "", t("usage.options"), ...options, ""].join("\n");
}

/** `sm121 --help`: every verb with its own flags (the common ones once, at the end). */
export function usage(): string {
  const common = new Set(Object.keys(SSH));
  const lines = [t("usage.usage"), "", t("usage.commands")];
  for (const [name, v] of Object.entries(VERBS) as Array<[Verb, VerbHelp]>) {
    lines.push(`  ${`${name} ${v.args}`.trimEnd().padEnd(28)} ${t(v.summary)}`);
    const own = Object.entries(v.flags)
      .filter(([k]) => !common.has(k))
      .map(([k, f]) => flagWord(k, f));
    if (own.length > 0) lines.push(`      ${own.join("  ")}`);
  }
  lines.push("", t("usage.commonOptions"));
  for (const [k, f] of Object.entries(SSH)) {
    lines.push(`  ${flagWord(k, f).padEnd(28)} ${helpOf(f)}${k === "identity" ? ` ${t("usage.sshOnly")}` : ""}`);
  }
  lines.push("", t("usage.more"), "");
  return lines.join("\n");
}
