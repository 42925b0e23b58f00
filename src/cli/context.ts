/** What every CLI command starts from: the project directory, the stack and its configuration. */
import { resolve } from "node:path";
import { loadProject, type Project } from "../project";
import { str, type Parsed } from "./args";
import { pulumiStacks, type PulumiStack } from "./pulumi";

export interface CliContext {
  root: string;
  stack: string;
  /** The stack as the Pulumi CLI resolves it; undefined without a Pulumi CLI that knows the stack. */
  pulumi?: PulumiStack;
  out: (line: string) => void;
  err: (line: string) => void;
}

/** The project directory: $SM121_PROJECT, else the current directory. */
export function projectRoot(): string {
  return resolve(process.env["SM121_PROJECT"] ?? process.cwd());
}

/**
 * The stack: --stack, else $SM121_STACK, else $PULUMI_STACK, else the stack selected with
 * `pulumi stack select`, else "spark-site". Its configuration comes through the Pulumi CLI when one
 * knows the stack (so project defaults and ESC environments apply as they do for `pulumi up`),
 * else from Pulumi.<stack>.yaml alone.
 */
export function stackContext(
  p: Parsed,
  root: string,
  env: NodeJS.ProcessEnv = process.env,
): Pick<CliContext, "stack" | "pulumi"> {
  const stacks = pulumiStacks(root, env);
  const set = (v: string | undefined) => (v === "" ? undefined : v);
  const stack =
    str(p, "stack") ?? set(env["SM121_STACK"]) ?? set(env["PULUMI_STACK"]) ?? stacks?.selected ?? "spark-site";
  const pulumi = stacks?.stack(stack);
  return { stack, ...(pulumi !== undefined && { pulumi }) };
}

/** The project of the context's stack, with the configuration Pulumi resolves when there is a Pulumi CLI. */
export function contextProject(ctx: Pick<CliContext, "root" | "stack" | "pulumi">): Project {
  return loadProject(ctx.root, ctx.stack, ctx.pulumi?.config);
}
