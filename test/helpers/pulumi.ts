/**
 * The real Pulumi CLI in a temporary project: a file:// backend, a passphrase secrets provider,
 * its own PULUMI_HOME, no update checks and no plugin downloads.
 */
import { spawn } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pulumiRunEnv } from "../../src/cli/pulumi";
import { needsRealParts } from "../site/lane";
import { testDir } from "./tmp";

export interface PulumiRun {
  code: number | null;
  stdout: string;
  stderr: string;
  /** stdout + stderr, for assertions on messages wherever Pulumi printed them. */
  all: string;
  ms: number;
}

export interface PulumiEnv {
  dir: string;
  env: Record<string, string>;
  /**
   * `interruptWhen`: an operator's Ctrl-C (SIGINT) once that promise resolves, e.g. when the run
   * has reached a given step.
   */
  run(
    args: string[],
    opts?: {
      env?: Record<string, string>;
      input?: string;
      timeoutMs?: number;
      stream?: boolean;
      interruptWhen?: Promise<void>;
    },
  ): Promise<PulumiRun>;
}

export const PASSPHRASE = "sm121-test-passphrase";

export function pulumiEnv(projectDir: string, base: string = testDir("sm121-pulumi-")): PulumiEnv {
  needsRealParts("the Pulumi CLI");
  const state = join(base, "state");
  const home = join(base, "home");
  mkdirSync(state, { recursive: true });
  mkdirSync(home, { recursive: true });
  const env: Record<string, string> = {
    PULUMI_BACKEND_URL: `file://${state}`,
    PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
    PULUMI_HOME: home,
    PULUMI_SKIP_UPDATE_CHECK: "true",
    PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    PULUMI_AUTOMATION_API_SKIP_VERSION_CHECK: "true",
    NO_COLOR: "1",
  };
  return {
    dir: projectDir,
    env,
    run(args, opts = {}) {
      return new Promise((resolve, reject) => {
        const started = Date.now();
        const child = spawn("pulumi", [...args, "--non-interactive", "--color", "never"], {
          cwd: projectDir,
          env: pulumiRunEnv({ ...process.env, ...env, ...opts.env }),
          stdio: ["pipe", "pipe", "pipe"],
        });
        let stdout = "";
        let stderr = "";
        const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 300_000);
        let done = false;
        // An operator's Ctrl-C in the middle of the run.
        void opts.interruptWhen?.then(() => {
          if (!done) child.kill("SIGINT");
        });
        child.stdout.on("data", (d: Buffer) => {
          stdout += d.toString();
          if (opts.stream === true) process.stdout.write(d);
        });
        child.stderr.on("data", (d: Buffer) => {
          stderr += d.toString();
          if (opts.stream === true) process.stderr.write(d);
        });
        child.on("error", reject);
        child.on("close", (code) => {
          done = true;
          clearTimeout(timer);
          resolve({ code, stdout, stderr, all: stdout + stderr, ms: Date.now() - started });
        });
        child.stdin.end(opts.input ?? "");
      });
    },
  };
}

export function writeFiles(dir: string, files: Record<string, string>): void {
  for (const [name, content] of Object.entries(files)) {
    const p = join(dir, name);
    mkdirSync(join(p, ".."), { recursive: true });
    writeFileSync(p, content);
  }
}
