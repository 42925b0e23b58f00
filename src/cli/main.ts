/** The sm121 CLI: what Pulumi has no verb for. One main(), a usage text, process.exitCode. */
import { SpecError, SpecErrors } from "../recipe/errors";
import { UsageError, bool, parseArgs, type Parsed } from "./args";
import type { CliContext } from "./context";
import { LOCALES, localeOf, t, useLocale } from "../text/messages";
import { flagSpec, isVerb, usage, verbUsage, type Verb } from "./usage";
import { visible } from "../text/visible";

type Run = (ctx: CliContext, p: Parsed) => number | Promise<number>;

/**
 * What each verb runs (its flags and usage are in ./usage), loaded when the verb is asked for:
 * `sm121 --help` and a usage error load none of them (nor ssh2, zod or the Pulumi SDK).
 */
const COMMANDS: Record<Verb, () => Promise<Run>> = {
  init: async () => (await import("./init")).initCommand,
  preview: async () => stackRun("preview"),
  up: async () => stackRun("up"),
  refresh: async () => stackRun("refresh"),
  destroy: async () => stackRun("destroy"),
  validate: async () => (await import("./validate")).validateCommand,
  profiles: async () => (await import("./profiles")).profilesCommand,
  render: async () => (await import("./render")).renderCommand,
  status: async () => (await import("./status")).statusCommand,
  smoke: async () => (await import("./smoke")).smokeCommand,
  logs: async () => (await import("./logs")).logsCommand,
  bench: async () => (await import("./bench")).benchCommand,
  doctor: async () => (await import("./doctor")).doctorCommand,
  down: async () => (await import("./down")).downCommand,
  keep: async () => (await import("./keep")).keepCommand,
};

async function stackRun(verb: "preview" | "up" | "refresh" | "destroy"): Promise<Run> {
  const { stackVerb } = await import("./stackverbs");
  return (ctx, p) => stackVerb(verb, ctx, p);
}

/**
 * --lang L (or --lang=L) anywhere before `--`: read before anything is said, so that the usage,
 * the usage errors and `sm121 --help` are in that language too. It wins over $SM121_LANG and the
 * locale; an unknown language is a usage error that lists the languages there are.
 */
function applyLang(argv: readonly string[]): void {
  let lang: string | undefined;
  for (let i = 0; i < argv.length && argv[i] !== "--"; i++) {
    const a = argv[i] ?? "";
    if (a === "--lang") lang = argv[i + 1] ?? "";
    else if (a.startsWith("--lang=")) lang = a.slice("--lang=".length);
  }
  if (lang === undefined) return;
  const locale = localeOf(lang);
  if (locale === undefined) throw new UsageError(t("usage.badLang", { lang, locales: LOCALES.join(", ") }));
  useLocale(locale);
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const [name, ...rest] = argv;
  // `sm121 status | head`: a closed pipe ends the output, not the program with a stack trace.
  let piped = true;
  process.stdout.on("error", (e: NodeJS.ErrnoException) => {
    if (e.code === "EPIPE") piped = false;
    else throw e;
  });
  // Every line the CLI prints may hold what a node or an engine sent: its control characters are shown.
  const out = (l: string) => {
    if (piped) process.stdout.write(`${visible(l)}\n`);
  };
  const err = (l: string) => process.stderr.write(`${visible(l)}\n`);
  try {
    applyLang(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err(`sm121${name !== undefined && isVerb(name) ? ` ${name}` : ""}: ${e.message}`);
    process.exitCode = 2;
    return;
  }
  // `sm121 --lang ru` alone, like `sm121`, prints the usage.
  const asksUsage =
    name === undefined || ["help", "--help", "-h", "--lang"].includes(name) || name.startsWith("--lang=");
  if (asksUsage) {
    out(usage());
    return;
  }
  if (!isVerb(name)) {
    err(`${t("usage.unknownCommand", { name })}\n\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  let parsed: Parsed;
  try {
    parsed = parseArgs(rest, flagSpec(name));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    // A flag the verb does not take: say which, and show what it takes.
    err(`sm121 ${name}: ${e.message}\n\n${verbUsage(name)}`);
    process.exitCode = 2;
    return;
  }
  if (bool(parsed, "help")) {
    out(verbUsage(name));
    return;
  }
  try {
    const { projectRoot, stackContext } = await import("./context");
    const run = await COMMANDS[name]();
    const root = projectRoot();
    const ctx: CliContext = { root, ...stackContext(parsed, root), out, err };
    process.exitCode = await run(ctx, parsed);
  } catch (e) {
    if (e instanceof UsageError) {
      err(`sm121 ${name}: ${e.message}`);
      process.exitCode = 2;
    } else if (e instanceof SpecErrors || e instanceof SpecError) {
      err(e.message);
      process.exitCode = 1;
    } else {
      err(`sm121 ${name}: ${e instanceof Error ? e.message : String(e)}`);
      process.exitCode = 1;
    }
  }
}
