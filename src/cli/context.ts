/** What every CLI command starts from: the project directory, the stack and its configuration. */
import { existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { loadProject, type Project } from "../project";
import { str, type Parsed } from "./args";
import { stackSetup } from "./backend";
import { pulumiStacks, type PulumiStack } from "./pulumi";

export interface CliContext {
  root: string;
  stack: string;
  /** The stack as the Pulumi CLI resolves it; undefined without a Pulumi CLI that knows the stack. */
  pulumi?: PulumiStack;
  out: (line: string) => void;
  err: (line: string) => void;
}

/**
 * The project directory: $SM121_PROJECT, else the nearest directory up from the current one that
 * holds a Pulumi.yaml (as the Pulumi CLI finds its project), else the current directory (where
 * `sm121 init` makes one).
 */
export function projectRoot(env: NodeJS.ProcessEnv = process.env, cwd: string = process.cwd()): string {
  const set = env["SM121_PROJECT"];
  if (set !== undefined && set !== "") return resolve(set);
  for (let dir = resolve(cwd); ; dir = dirname(dir)) {
    if (existsSync(join(dir, "Pulumi.yaml"))) return dir;
    if (dirname(dir) === dir) return resolve(cwd);
  }
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
  // The backend and passphrase sm121's verbs use (./backend), nothing made for a mere look.
  const stacks = pulumiStacks(root, stackSetup(root, env).env);
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
