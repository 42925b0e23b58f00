/**
 * The Pulumi CLI as the sm121 CLI asks it: which stack is selected, and the stack's configuration
 * as Pulumi resolves it for the program (the stack file, Pulumi.yaml's project config, ESC
 * environments). Secrets are read one at a time, into memory, only when used: never to disk, never
 * into argv or output.
 */
import { spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { t } from "../text/messages";

/**
 * The environment sm121 runs the Pulumi CLI with (what the README asks an operator's shell to
 * export): diffs in parallel (sm121's diffs are pure functions of the inputs, so their order does
 * not matter) and Node's compile cache for the program, in the directory the dynamic provider
 * launcher and the program's own enableCompileCache use. What `env` sets wins.
 */
export function pulumiRunEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { PULUMI_PARALLEL_DIFF: "true", NODE_COMPILE_CACHE: join(tmpdir(), "node-compile-cache"), ...env };
}

/** What Pulumi holds for one stack. */
export interface PulumiStack {
  name: string;
  /** `sm121:<key>` (and every other key) to its value as text, as Pulumi hands it to a program; secrets left out. */
  config: Record<string, string>;
  /** The keys that hold secrets. */
  secretKeys: string[];
  /** A secret's plaintext, decrypted by the Pulumi CLI (its passphrase or secrets provider). */
  secret(key: string): string | undefined;
}

/** Pulumi's answer about the stacks of the project in `root`. */
export interface PulumiStacks {
  /** The stack selected with `pulumi stack select`, if any. */
  selected?: string;
  /** The stack's configuration, when the backend has a stack of that name; undefined otherwise. */
  stack(name: string): PulumiStack | undefined;
}

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

function pulumi(root: string, args: string[], env: NodeJS.ProcessEnv): Ran | undefined {
  const r = spawnSync("pulumi", [...args, "--non-interactive"], {
    cwd: root,
    env: { PULUMI_SKIP_UPDATE_CHECK: "true", ...env },
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  // No Pulumi CLI on PATH: the CLI reads the stack file itself.
  if (r.error !== undefined) return undefined;
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

export class PulumiError extends Error {
  constructor(command: string, r: Ran) {
    const tail = r.stderr.trim().split("\n").slice(-5).join("\n");
    super(t("pulumi.failed", { command, code: String(r.code), tail }));
    this.name = "PulumiError";
  }
}

/**
 * The project's stacks as the Pulumi CLI sees them, or undefined when there is no Pulumi CLI or it
 * knows no stacks here (no Pulumi.yaml, not logged in to a backend): then the stack file is all
 * there is.
 */
export function pulumiStacks(root: string, env: NodeJS.ProcessEnv = process.env): PulumiStacks | undefined {
  const ls = pulumi(root, ["stack", "ls", "--json"], env);
  if (ls === undefined || ls.code !== 0) return undefined;
  const stacks = JSON.parse(ls.stdout) as Array<{ name: string; current?: boolean }>;
  const selected = stacks.find((s) => s.current === true)?.name;
  return {
    ...(selected !== undefined && { selected }),
    stack(name) {
      // Pulumi Cloud may list a stack fully qualified (org/project/stack).
      if (!stacks.some((s) => s.name === name || s.name.endsWith(`/${name}`))) return undefined;
      const command = `pulumi config --json --stack ${name}`;
      const r = pulumi(root, ["config", "--json", "--stack", name], env);
      if (r === undefined || r.code !== 0) throw new PulumiError(command, r ?? { code: null, stdout: "", stderr: "" });
      const entries = JSON.parse(r.stdout) as Record<string, { value?: string; secret?: boolean }>;
      const config: Record<string, string> = {};
      const secretKeys: string[] = [];
      for (const [k, v] of Object.entries(entries)) {
        if (v.secret === true) secretKeys.push(k);
        else if (v.value !== undefined) config[k] = v.value;
      }
      return {
        name,
        config,
        secretKeys,
        secret(key) {
          if (!secretKeys.includes(key)) return undefined;
          const got = pulumi(root, ["config", "get", key, "--stack", name], env);
          if (got === undefined || got.code !== 0)
            throw new PulumiError(
              `pulumi config get ${key} --stack ${name}`,
              got ?? { code: null, stdout: "", stderr: "" },
            );
          // `config get` ends the value with a newline of its own.
          return got.stdout.endsWith("\n") ? got.stdout.slice(0, -1) : got.stdout;
        },
      };
    },
  };
}
