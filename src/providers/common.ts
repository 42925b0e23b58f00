/** Small helpers of the provider implementations. */
import { homedir } from "node:os";
import type { SshAuth } from "../remote";
import type { ConnectionSettings } from "./engineDeployment";

export function expandHome(p: string): string {
  return p === "~" ? homedir() : p.startsWith("~/") ? `${homedir()}/${p.slice(2)}` : p;
}

/** Progress from a provider: the engine shows a provider's stderr lines under the resource. */
export function providerLog(subject: string): (message: string) => void {
  return (message) => {
    process.stderr.write(`sm121: ${message.startsWith(`${subject}: `) ? message : `${subject}: ${message}`}\n`);
  };
}

export function authOf(c: ConnectionSettings): SshAuth {
  return {
    knownHosts: expandHome(c.knownHosts),
    hostKeys: c.hostKeys,
    ...(c.privateKey !== undefined && c.privateKey !== "" && { privateKey: c.privateKey }),
    ...(c.passphrase !== undefined && c.passphrase !== "" && { passphrase: c.passphrase }),
    ...(c.dialTimeoutMs !== undefined && { dialTimeoutMs: c.dialTimeoutMs }),
    owner: `${c.owner ?? "an sm121 operation"} pid ${process.pid}`,
    ...(c.lockWaitS !== undefined && { lockWaitS: c.lockWaitS }),
  };
}
