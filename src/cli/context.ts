/** What every CLI command starts from: the project directory and the stack. */
import { resolve } from "node:path";
import { str, type Parsed } from "./args";

export interface CliContext {
  root: string;
  stack: string;
  out: (line: string) => void;
  err: (line: string) => void;
}

/** The stack: --stack, else $SM121_STACK, else $PULUMI_STACK, else "spark-site". */
export function resolveStack(p: Parsed): string {
  return str(p, "stack") ?? process.env["SM121_STACK"] ?? process.env["PULUMI_STACK"] ?? "spark-site";
}

/** The project directory: $SM121_PROJECT, else the current directory. */
export function projectRoot(): string {
  return resolve(process.env["SM121_PROJECT"] ?? process.cwd());
}
