/**
 * The program's login to the nodes: the CLI's (remote/login: the stack's `sm121:sshPrivateKey`,
 * ssh-agent, the key files OpenSSH would try, `~/.ssh/config`), for the plan-time look; and what
 * the providers get of it, as one secret input (never a machine path, never a closure): the
 * stack's key and passphrase, and the key files' material that logged in at the look. The agent
 * reaches the providers through the environment.
 */
import type { Config } from "@pulumi/pulumi/config";
import { all, secret, type Output } from "@pulumi/pulumi/output";
import * as log from "@pulumi/pulumi/log";
import { known } from "./components/known";
import { authOf } from "./providers/common";
import type { ConnectionSettings } from "./providers/settings";
import type { Site } from "./recipe/types";
import type { SshAuth } from "./remote";
import { envSources, loginAuth, loginFor, loginHome, writtenOf } from "./remote/login";
import { say } from "./text/messages";

export interface ProgramLogin {
  /** The look's login. */
  lookAuth(): Promise<SshAuth>;
  /** The providers' connection, with the key files' material that logged in (Dialer.usedKeyFiles). */
  connection(keyFiles: string[]): Output<ConnectionSettings>;
}

export function programLogin(site: Site, stack: string, config: Config): ProgramLogin {
  const privateKey = config.getSecret("sshPrivateKey");
  const passphrase = config.getSecret("sshPassphrase");
  const base = { owner: stack, lockWaitS: site.lockWaitS, knownHosts: site.knownHosts, hostKeys: site.hostKeys };
  return {
    async lookAuth() {
      const [key, pass] = await known(all([privateKey, passphrase]));
      const sources = envSources(process.env, {
        ...(key !== undefined && { stackKey: key }),
        ...(pass !== undefined && { passphrase: pass }),
      });
      const login = loginFor(sources, writtenOf(site.nodes), loginHome());
      for (const s of login.skipped) void log.info(say(s));
      return { ...authOf(base), ...loginAuth(login, sources.passphrase) };
    },
    connection(keyFiles) {
      const c = all([privateKey, passphrase]).apply(([key, pass]) => ({
        ...base,
        ...(key !== undefined && { privateKey: key }),
        ...(keyFiles.length > 0 && { privateKeys: keyFiles }),
        ...(pass !== undefined && { passphrase: pass }),
      }));
      // Key material is a secret in the state's inputs too (the stack's key makes its own one).
      return keyFiles.length > 0 ? secret(c) : c;
    },
  };
}
