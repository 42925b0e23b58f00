/** Small helpers of the provider implementations; loading it listens for Ctrl-C (./cancel). */
import "./cancel";
import { runName, type SshAuth } from "../remote";
import { expandHome } from "../text/home";
import type { ConnectionSettings } from "./engineDeployment";

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
    owner: runName(c.owner),
    ...(c.lockWaitS !== undefined && { lockWaitS: c.lockWaitS }),
  };
}
