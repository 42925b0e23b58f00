// Running a program of the machine and collecting its output (the site's own set-up steps).
import { execFile } from "node:child_process";

export interface RunOptions {
  input?: string | undefined;
  env?: NodeJS.ProcessEnv;
  timeoutMs?: number;
}

/** Runs `cmd args`; resolves with its stdout, rejects with the command, its exit code and stderr. */
export function run(cmd: string, args: string[], o: RunOptions = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      cmd,
      args,
      { env: o.env ?? process.env, timeout: o.timeoutMs ?? 600_000, maxBuffer: 64 << 20, encoding: "utf8" },
      (err, stdout, stderr) => {
        if (err === null) {
          resolve(stdout);
          return;
        }
        reject(
          new Error(
            `test site: ${cmd} ${args.join(" ")} failed (${err.code ?? err.signal ?? "?"}):\n` +
              stderr.trim().split("\n").slice(-10).join("\n"),
          ),
        );
      },
    );
    child.stdin?.end(o.input ?? "");
  });
}
