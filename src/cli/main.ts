/** The sm121 CLI: what Pulumi has no verb for. One main(), a usage text, process.exitCode. */
import { SpecError, SpecErrors } from "../recipe/errors";
import { UsageError, bool, parseArgs, str, type Parsed } from "./args";
import { projectRoot, stackContext, type CliContext } from "./context";
import { benchCommand } from "./bench";
import { doctorCommand } from "./doctor";
import { downCommand } from "./down";
import { initCommand } from "./init";
import { LOCALES, localeOf, useLocale } from "../text/messages";
import { logsCommand } from "./logs";
import { profilesCommand } from "./profiles";
import { renderCommand } from "./render";
import { smokeCommand } from "./smoke";
import { statusCommand } from "./status";
import { flagSpec, isVerb, usage, verbUsage, type Verb } from "./usage";
import { validateCommand } from "./validate";

type Run = (ctx: CliContext, p: Parsed) => number | Promise<number>;

/** What each verb runs; its flags and usage are in ./usage. */
const COMMANDS: Record<Verb, Run> = {
  init: initCommand,
  validate: validateCommand,
  profiles: profilesCommand,
  render: renderCommand,
  status: statusCommand,
  smoke: smokeCommand,
  logs: logsCommand,
  bench: benchCommand,
  doctor: doctorCommand,
  down: downCommand,
};

/** --lang L: a usage error lists the languages there are. */
function applyLang(p: Parsed): void {
  const lang = str(p, "lang");
  if (lang === undefined) return;
  const locale = localeOf(lang);
  if (locale === undefined) throw new UsageError(`--lang ${lang}: not a language of sm121; use one of ${LOCALES.join(", ")}`);
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
  const out = (l: string) => {
    if (piped) process.stdout.write(`${l}\n`);
  };
  const err = (l: string) => process.stderr.write(`${l}\n`);
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(usage());
    return;
  }
  if (!isVerb(name)) {
    err(`sm121: unknown command "${name}"\n\n${usage()}`);
    process.exitCode = 2;
    return;
  }
  let parsed: Parsed;
  try {
    parsed = parseArgs(rest, flagSpec(name));
    applyLang(parsed);
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
    const root = projectRoot();
    const ctx: CliContext = { root, ...stackContext(parsed, root), out, err };
    process.exitCode = await COMMANDS[name](ctx, parsed);
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
