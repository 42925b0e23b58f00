/**
 * `sm121 preview | up | refresh | destroy`: the stack's program through Pulumi's Automation API
 * (a LocalWorkspace on the project's directory, the Pulumi CLI on PATH), with Pulumi's own output
 * streamed as it comes. The first use makes the stack, with the backend and passphrase of
 * ./backend (made where the operator names none, and said once). `pulumi preview | up | refresh |
 * destroy` in the same directory work on the same project and stack.
 *
 * Ctrl-C is Pulumi's: the CLI gets the signal from the terminal and cancels the operation as
 * `pulumi up` does (a second one ends it at once); sm121 waits for it to end.
 */
import { bool, type Parsed } from "./args";
import { madeLines, stackSetup } from "./backend";
import type { CliContext } from "./context";
import { t } from "../text/messages";

export type StackVerb = "preview" | "up" | "refresh" | "destroy";

/** Pulumi's colours where a terminal shows them and NO_COLOR does not ask for none. */
function colour(env: NodeJS.ProcessEnv): "always" | "never" {
  return process.stdout.isTTY === true && (env["NO_COLOR"] ?? "") === "" ? "always" : "never";
}

/** The CLI's environment as the Automation API takes it: defined values only. */
function defined(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

export async function stackVerb(verb: StackVerb, ctx: CliContext, p: Parsed): Promise<number> {
  const setup = stackSetup(ctx.root, process.env, true);
  for (const l of madeLines(setup)) ctx.out(l);
  const auto = await import("@pulumi/pulumi/automation");
  const ws = await auto.LocalWorkspace.create({ workDir: ctx.root, envVars: defined(setup.env) });
  const stack = await auto.Stack.select(ctx.stack, ws).catch(async (e: unknown) => {
    if (!(e instanceof auto.StackNotFoundError)) throw e;
    const made = await auto.Stack.create(ctx.stack, ws);
    ctx.out(t("stack.created", { stack: ctx.stack, url: setup.shown }));
    return made;
  });
  const streamed = {
    onOutput: (s: string) => void process.stdout.write(s),
    onError: (s: string) => void process.stderr.write(s),
    color: colour(process.env),
    ...(bool(p, "diff") && { diff: true }),
  };
  // The terminal's Ctrl-C reaches the Pulumi CLI too, which cancels as it does for `pulumi up`.
  const keep = () => undefined;
  process.on("SIGINT", keep);
  try {
    if (verb === "preview") await stack.preview(streamed);
    else if (verb === "up") await stack.up(streamed);
    else if (verb === "refresh") await stack.refresh(streamed);
    else await stack.destroy(streamed);
    return 0;
  } catch (e) {
    if (!(e instanceof auto.CommandError)) throw e;
    // Pulumi said what failed, above; the exit code is its own.
    ctx.err(t("stack.failed", { verb, stack: ctx.stack }));
    return 1;
  } finally {
    process.off("SIGINT", keep);
  }
}
