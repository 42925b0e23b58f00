/** The sm121 CLI: what Pulumi has no verb for. One main(), a usage text, process.exitCode. */
import { SpecError, SpecErrors } from "../recipe/errors";
import { UsageError, parseArgs, type FlagSpec } from "./args";
import { projectRoot, resolveStack, type CliContext } from "./context";
import { renderCommand } from "./render";
import { validateCommand } from "./validate";

const USAGE = `usage: sm121 <command> [options]

commands:
  validate                     check every recipe, profile and the site; exit 1 on any error
  render <deployment>          print each node's bundle and the exact launch command
      --node N  --json  --out DIR
  (status, smoke, logs, bench and doctor arrive with the CLI issue)

common options:
  --stack S                    the stack whose Pulumi.<S>.yaml holds the site (default: $SM121_STACK or spark-site)
`;

const COMMANDS: Record<string, { flags: FlagSpec; run: (ctx: CliContext, p: ReturnType<typeof parseArgs>) => number | Promise<number> }> = {
  validate: { flags: { stack: "string" }, run: (ctx) => validateCommand(ctx) },
  render: { flags: { stack: "string", node: "string", json: "bool", out: "string" }, run: renderCommand },
};

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  const [name, ...rest] = argv;
  const out = (l: string) => process.stdout.write(`${l}\n`);
  const err = (l: string) => process.stderr.write(`${l}\n`);
  if (name === undefined || name === "help" || name === "--help" || name === "-h") {
    out(USAGE);
    return;
  }
  const cmd = COMMANDS[name];
  if (cmd === undefined) {
    err(`sm121: unknown command "${name}"\n\n${USAGE}`);
    process.exitCode = 2;
    return;
  }
  try {
    const parsed = parseArgs(rest, cmd.flags);
    const ctx: CliContext = { root: projectRoot(), stack: resolveStack(parsed), out, err };
    process.exitCode = await cmd.run(ctx, parsed);
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
