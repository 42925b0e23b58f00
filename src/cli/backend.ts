/**
 * Where a stack's state lives and what unlocks its secrets, for sm121's own verbs: the same the
 * `pulumi` verbs find in the project's directory, so both work on one stack.
 *
 * - The backend: `$PULUMI_BACKEND_URL`, else the project's `backend.url` (Pulumi.yaml), else
 *   sm121's local one, `file://~/.sm121/state` (a directory of this machine's user, mode 0700).
 * - The passphrase of the stack's secrets: `$PULUMI_CONFIG_PASSPHRASE` or
 *   `$PULUMI_CONFIG_PASSPHRASE_FILE`, else `~/.sm121/passphrase` (mode 0600).
 *
 * What is missing is made only where a stack is made (`sm121 init`, and the first `sm121 up` of a
 * stack): the state directory, and a generated passphrase, each said once with what it is for.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { projectBackend } from "../project";
import { backendIdentity } from "../serve/owner";
import { expandHome } from "../text/home";
import { t } from "../text/messages";
import { pulumiRunEnv } from "./pulumi";

/** sm121's directory in the operator's home: the local state and the passphrase. */
export const SM121_HOME = ".sm121";

export interface StackSetup {
  /** The environment the Pulumi CLI runs with (the operator's, plus the backend and passphrase). */
  env: NodeJS.ProcessEnv;
  /** The backend's URL, and where it came from. */
  url: string;
  /** The URL as sm121 says it: never with the user or password a URL may carry (serve/owner). */
  shown: string;
  from: "env" | "project" | "sm121";
  /** sm121's passphrase file, when the operator's environment names no passphrase. */
  passphraseFile?: string;
  /** What this call made, each said once (./backend madeLines). */
  made: Array<"state" | "passphrase">;
}

/** The passphrase's size: 32 random bytes, as text. */
const passphrase = (): string => randomBytes(32).toString("base64url");

/**
 * The backend and the passphrase of the project in `root`. `make`: create the local state
 * directory and the passphrase where they are missing.
 */
export function stackSetup(
  root: string,
  env: NodeJS.ProcessEnv = process.env,
  make = false,
  home: string = env["HOME"] ?? homedir(),
): StackSetup {
  const made: StackSetup["made"] = [];
  const dir = join(home, SM121_HOME);
  const set = env["PULUMI_BACKEND_URL"];
  const project = projectBackend(root);
  const from = set !== undefined && set !== "" ? "env" : project !== undefined ? "project" : "sm121";
  const state = join(dir, "state");
  const url = from === "env" ? (set ?? "") : from === "project" ? (project ?? "") : `file://${state}`;
  // A file:// backend's directory, wherever it was named: Pulumi does not make it.
  const local = url.startsWith("file://") ? expandHome(url.slice("file://".length), home) : undefined;
  if (local !== undefined && make && !existsSync(local)) {
    mkdirSync(local, { recursive: true, mode: 0o700 });
    made.push("state");
  }
  const named = [env["PULUMI_CONFIG_PASSPHRASE"], env["PULUMI_CONFIG_PASSPHRASE_FILE"]].some((v) => v !== undefined);
  const file = join(dir, "passphrase");
  if (!named && make && !existsSync(file)) {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // No newline: the passphrase is the file's whole content.
    writeFileSync(file, passphrase(), { mode: 0o600, flag: "wx" });
    made.push("passphrase");
  }
  const useFile = !named && existsSync(file);
  return {
    env: {
      ...pulumiRunEnv(env),
      PULUMI_SKIP_UPDATE_CHECK: env["PULUMI_SKIP_UPDATE_CHECK"] ?? "true",
      ...(from === "sm121" && { PULUMI_BACKEND_URL: url }),
      ...(useFile && { PULUMI_CONFIG_PASSPHRASE_FILE: file }),
    },
    url,
    shown: backendIdentity(url),
    from,
    ...(useFile && { passphraseFile: file }),
    made,
  };
}

/**
 * What a setup made, said once: the state's place, the passphrase's role and what losing it costs,
 * and (`exports`) what the pulumi verbs need to work on the same stack.
 */
export function madeLines(s: StackSetup, exports = true): string[] {
  const out: string[] = [];
  if (s.made.includes("state")) out.push(t("stack.stateMade", { url: s.shown }));
  if (s.made.includes("passphrase") && s.passphraseFile !== undefined)
    out.push(t("stack.passphraseMade", { file: s.passphraseFile }));
  const e = exportsFor(s);
  if (exports && s.made.length > 0 && e.length > 0) out.push(t("init.pulumiVerbs", { exports: e.join("; ") }));
  return out;
}

/** The lines an operator exports for the `pulumi` verbs to find what sm121's verbs use. */
export function exportsFor(s: StackSetup): string[] {
  return [
    ...(s.from === "sm121" ? [`export PULUMI_BACKEND_URL=${s.url}`] : []),
    ...(s.passphraseFile !== undefined ? [`export PULUMI_CONFIG_PASSPHRASE_FILE=${s.passphraseFile}`] : []),
  ];
}
