/**
 * What `ssh-keyscan` does, for `sm121 init`: the host key a node presents, read in the key
 * exchange and refused there, before any login is tried. The caller shows its fingerprint, checks
 * it against known_hosts (./knownhosts) and records it once the operator confirms it.
 */
import type { Client } from "ssh2";
import { msg, SaidError } from "../text/messages";

export interface ScannedKey {
  /** The key blob in the SSH wire format (its type name first). */
  blob: Buffer;
}

export function scanHostKey(host: string, port: number, timeoutMs = 10_000): Promise<ScannedKey> {
  // Loaded here, as in ./ssh: remote/ may be reached from a serialized provider.
  const { Client: SshClient } = require("ssh2") as typeof import("ssh2");
  const client: Client = new SshClient();
  let key: Buffer | undefined;
  return new Promise((resolve, reject) => {
    const done = (e?: Error) => {
      client.end();
      if (key !== undefined) resolve({ blob: key });
      else reject(e ?? new SaidError(msg("remote.noHostKey", { host, port })));
    };
    client.once("error", (e: Error) => done(e));
    client.once("ready", () => done());
    client.connect({
      host,
      port,
      username: "sm121-keyscan",
      readyTimeout: timeoutMs,
      hostVerifier: (blob: Buffer) => {
        key = Buffer.from(blob);
        // Refused: the scan ends at the key exchange, as ssh-keyscan's does.
        return false;
      },
    });
  });
}
