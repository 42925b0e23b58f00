/** The sm121 CLI: what Pulumi has no verb for. One main(), a usage text, process.exitCode. */
import { SpecError, SpecErrors } from "../recipe/errors";
import { UsageError, parseArgs, type FlagSpec } from "./args";
import { projectRoot, stackContext, type CliContext } from "./context";
import { benchCommand } from "./bench";
import { doctorCommand } from "./doctor";
import { logsCommand } from "./logs";
import { renderCommand } from "./render";
import { smokeCommand } from "./smoke";
import { statusCommand } from "./status";
import { validateCommand } from "./validate";

const USAGE = `usage: sm121 <command> [options]

commands:
  validate                     check every recipe, profile and the site; exit 1 on any error
  render <deployment>          print each node's bundle and the exact launch command
      --node N  --json  --out DIR
  status                       per node of every deployment: container or session, profile, drift,
                               health (/v1/models), KV cache line, MemAvailable, watermark, GPU apps
      --node N  --json  --no-http  --gpu-probe  --yes
  smoke --node N [deployment]  one short chat completion on the node's endpoint (curl on the node)
      --yes  --json
  logs <deployment>            the engine log of every node, each line prefixed with the node
      --node N  --lines N  --follow
  bench <deployment>           a streaming chat load from this machine: TTFT, ITL, tokens/s, req/s
      --concurrency C  --requests N  --prompt-tokens P  --max-tokens M  --model NAME
      --url URL[,URL] (OpenAI endpoints instead of a deployment)  --node N  --yes  --json
  doctor                       what each node needs for its deployments; exit 1 on any problem
      --node N  --json

common options:
  --stack S                    the stack (default: $SM121_STACK, else the stack selected with \`pulumi stack select\`, else spark-site);
                               its configuration as the Pulumi CLI resolves it, else Pulumi.<S>.yaml when there is no Pulumi CLI

status, smoke, logs, bench and doctor reach the nodes over ssh, host keys checked against the site's knownHosts:
  --identity FILE              the private key when the stack has no sm121:sshPrivateKey secret
                               (default: $SM121_SSH_KEY, else ssh-agent, else ~/.ssh/id_ed25519 or id_rsa)
  --yes                        allow a protected node: an HTTP request (status, smoke, bench) or a GPU probe
Messages follow $SM121_LANG, else $LC_ALL / $LC_MESSAGES / $LANG: en, ru, zh, ja, de, es.
`;

const COMMANDS: Record<string, { flags: FlagSpec; run: (ctx: CliContext, p: ReturnType<typeof parseArgs>) => number | Promise<number> }> = {
  validate: { flags: { stack: "string" }, run: (ctx) => validateCommand(ctx) },
  render: { flags: { stack: "string", node: "string", json: "bool", out: "string" }, run: renderCommand },
  status: { flags: { stack: "string", node: "string", json: "bool", "no-http": "bool", "gpu-probe": "bool", yes: "bool", identity: "string" }, run: statusCommand },
  smoke: { flags: { stack: "string", node: "string", yes: "bool", json: "bool", identity: "string" }, run: smokeCommand },
  logs: { flags: { stack: "string", node: "string", follow: "bool", lines: "number", identity: "string" }, run: logsCommand },
  bench: {
    flags: { stack: "string", concurrency: "number", requests: "number", "prompt-tokens": "number", "max-tokens": "number", model: "string", url: "string", node: "string", yes: "bool", json: "bool", identity: "string" },
    run: benchCommand,
  },
  doctor: { flags: { stack: "string", node: "string", json: "bool", identity: "string" }, run: doctorCommand },
};

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
    const root = projectRoot();
    const ctx: CliContext = { root, ...stackContext(parsed, root), out, err };
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
