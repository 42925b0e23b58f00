/** Small helpers of the provider implementations; loading it listens for Ctrl-C (./cancel). */
import "./cancel";
import type * as pulumi from "@pulumi/pulumi";
import { fstatSync } from "node:fs";
import { runName, type SshAuth } from "../remote";
import { expandHome } from "../text/home";
import { visible } from "../text/visible";
import type { ConnectionSettings } from "./settings";

/**
 * The SDK's contract of a dynamic provider as each sm121 kind's `provider` object satisfies it
 * (./providerText): what the engine passes in is unknown until parsed (./stateVersion).
 */
export type ResourceProvider = pulumi.dynamic.ResourceProvider<unknown, unknown>;

/** The value the engine gives an input that is not known yet during a preview (the SDK's rpc unknownValue). */
export const UNKNOWN = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** Whether a value holds an input not known yet (a preview): nothing to check or diff in it. */
export function holdsUnknown(v: unknown): boolean {
  if (v === UNKNOWN) return true;
  if (Array.isArray(v)) return v.some(holdsUnknown);
  return typeof v === "object" && v !== null && Object.values(v).some(holdsUnknown);
}

/** Whether the engine passed no olds: nothing stored yet (`{}` before the first create). */
export const noOlds = (w: unknown): boolean =>
  w === undefined || (typeof w === "object" && w !== null && Object.keys(w).length === 0);

/**
 * The provider interface asks every operation for a promise; a pure one (check, diff, a delete that
 * only says what stays) computes its answer at once, and a throw becomes the promise's rejection.
 */
export function settled<T>(compute: () => T): Promise<T> {
  return new Promise((resolve) => resolve(compute()));
}

/**
 * Progress from a provider: the engine shows a provider's stderr lines under the resource, each
 * named by `subject` here (a message never names it itself). The first one also ties this
 * provider process to its run (endWithRun).
 */
export function providerLog(subject: string): (message: string) => void {
  endWithRun();
  // What a node printed (progress, an engine's last log line) is shown with its control characters visible.
  return (message) => {
    process.stderr.write(`sm121: ${visible(subject)}: ${visible(message)}\n`);
  };
}

let tied = false;

function stdinIsPipe(): boolean {
  try {
    return fstatSync(0).isFIFO();
  } catch {
    return false;
  }
}

/**
 * A provider process ends with the Pulumi CLI that started it. Nothing else ends it when the CLI
 * dies without stopping its plugins (SIGKILL, the OOM killer): the process would go on serving a
 * run nobody records, holding node locks, and the dynamic provider host turns its first write to
 * the dead CLI's stderr into an endless loop of EPIPE errors it reports on that same stderr
 * (observed: 40% of a core, the node lock held until the process was killed). The CLI keeps each
 * plugin's stdin open for the plugin's whole life (sdk/go/common/resource/plugin: StdinPipe),
 * so the end of stdin, or a failed write to stderr, is the end of the run: the process exits, its
 * connections close, and every node lock it held goes with them (remote/lock). A process whose
 * stdin is no pipe (a terminal, /dev/null: a provider method called outside the host) is left as
 * it is.
 */
function endWithRun(): void {
  if (tied) return;
  tied = true;
  if (!stdinIsPipe()) return;
  const gone = () => process.exit(1);
  process.stdin.on("end", gone);
  process.stdin.on("error", gone);
  process.stderr.on("error", gone);
  process.stdin.resume();
  // The run's end is watched, not waited for: the host's gRPC server keeps the process alive.
  process.stdin.unref();
}

export function authOf(c: ConnectionSettings): SshAuth {
  return {
    knownHosts: expandHome(c.knownHosts),
    hostKeys: c.hostKeys,
    ...(c.privateKey !== undefined && c.privateKey !== "" && { privateKey: c.privateKey }),
    ...(c.passphrase !== undefined && c.passphrase !== "" && { passphrase: c.passphrase }),
    ...(c.privateKeys !== undefined && {
      keyFiles: c.privateKeys.map((privateKey) => ({ privateKey, from: "key file" })),
    }),
    ...(c.dialTimeoutMs !== undefined && { dialTimeoutMs: c.dialTimeoutMs }),
    owner: runName(c.owner),
    ...(c.lockWaitS !== undefined && { lockWaitS: c.lockWaitS }),
  };
}
