/**
 * How sm121 logs in to a node: one rule for the CLI, the Pulumi program and (through what the
 * program hands them) the providers, in the order OpenSSH itself takes:
 *
 * - where: the site's `ssh` block, filled from `~/.ssh/config` as ssh(1) fills a command line from
 *   it: a `Host` entry that matches the written host gives its `HostName`, and `User` and `Port`
 *   where the site leaves them out (what the site writes wins, as a command line does); else port
 *   22 and the local user name;
 * - with what: the stack's secret `sm121:sshPrivateKey`, then ssh-agent (`$SSH_AUTH_SOCK`), then
 *   the key files OpenSSH would try: a file named for this run (`--identity`, `$SM121_SSH_KEY`,
 *   ssh's `-i`), the entry's `IdentityFile`s, else `~/.ssh/id_rsa`, `id_ecdsa`, `id_ed25519`.
 *   A key file that cannot be read or is encrypted without `sm121:sshPassphrase` /
 *   `$SM121_SSH_PASSPHRASE` is left out, and why is said.
 *
 * The providers get no machine path: the program passes them the key material that logged in at
 * its look, as a secret input (src/program.ts), and ssh-agent through the environment.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir, userInfo } from "node:os";
import { join } from "node:path";
import { msg, type Msg } from "../text/messages";
import type { WrittenSsh } from "../recipe/types";
import type { SshAuth } from "./ssh";

/** What `~/.ssh/config` gives one host: the first value of each option wins, as ssh_config(5) reads it. */
export interface SshConfigHost {
  hostName?: string;
  user?: string;
  port?: number;
  identityFiles: string[];
  /** `IdentitiesOnly yes`: the agent's keys are not offered. */
  identitiesOnly?: boolean;
  /** The line of the `Host` entry that gave the HostName, for the plan's words. */
  entry?: string;
}

/** A `Host` pattern list matches when one pattern matches and no negated one does (ssh_config(5)). */
function hostMatches(patterns: readonly string[], host: string): boolean {
  let matched = false;
  for (const p of patterns) {
    const negated = p.startsWith("!");
    const re = new RegExp(
      `^${(negated ? p.slice(1) : p)
        .split("")
        .map((c) => (c === "*" ? ".*" : c === "?" ? "." : c.replace(/[.+^${}()|[\]\\]/g, "\\$&")))
        .join("")}$`,
      "i",
    );
    if (!re.test(host)) continue;
    if (negated) return false;
    matched = true;
  }
  return matched;
}

/** A line's keyword and arguments: `Key value`, `Key=value`, double quotes around a value with spaces. */
function lineWords(line: string): { key: string; args: string[] } | undefined {
  const s = line.trim();
  if (s === "" || s.startsWith("#")) return undefined;
  const m = /^(\S+?)(?:\s*=\s*|\s+)(.*)$/.exec(s);
  if (m === null) return { key: s.toLowerCase(), args: [] };
  const args = [...(m[2] ?? "").matchAll(/"([^"]*)"|(\S+)/g)].map((a) => a[1] ?? a[2] ?? "");
  return { key: (m[1] ?? "").toLowerCase(), args };
}

/**
 * The options `text` (an ssh_config file) gives `host`. `Match` blocks are not evaluated (they
 * test what only ssh knows at run time): their options are not taken.
 */
export function sshConfigFor(text: string, host: string): SshConfigHost {
  const out: SshConfigHost = { identityFiles: [] };
  // Options before the first Host line apply to every host.
  let applies = true;
  let entry = "";
  for (const raw of text.split("\n")) {
    const w = lineWords(raw);
    if (w === undefined) continue;
    if (w.key === "host") {
      applies = hostMatches(w.args, host);
      entry = `Host ${w.args.join(" ")}`;
      continue;
    }
    if (w.key === "match") {
      applies = false;
      continue;
    }
    if (!applies) continue;
    const v = w.args[0];
    if (v === undefined) continue;
    if (w.key === "hostname" && out.hostName === undefined) {
      out.hostName = v.replace(/%h/g, host).replace(/%%/g, "%");
      out.entry = entry;
    } else if (w.key === "user" && out.user === undefined) out.user = v;
    else if (w.key === "port" && out.port === undefined && /^\d{1,5}$/.test(v)) out.port = Number(v);
    else if (w.key === "identityfile" && v.toLowerCase() !== "none") out.identityFiles.push(v);
    else if (w.key === "identitiesonly" && out.identitiesOnly === undefined) out.identitiesOnly = /^yes$/i.test(v);
  }
  return out;
}

/** Where a login goes: the address, port and user ssh would use. */
export interface SshTarget {
  host: string;
  port: number;
  user: string;
}

/** The operator's side of every login: their home (its `.ssh/`) and user name, read once. */
export interface LoginHome {
  home: string;
  user: string;
  /** `~/.ssh/config`, or "" without one. */
  config: string;
}

export function loginHome(dir?: string): LoginHome {
  const home = dir === undefined || dir === "" ? homedir() : dir;
  return { home, user: userInfo().username, config: readConfig(join(home, ".ssh", "config")) };
}

/** A config file's text; an unreadable one is as none (ssh itself refuses to start then). */
function readConfig(file: string): string {
  try {
    return existsSync(file) ? readFileSync(file, "utf8") : "";
  } catch {
    return "";
  }
}

/** Where `written` leads, as ssh(1) resolves it with `~/.ssh/config`. */
export function sshTarget(written: WrittenSsh, h: LoginHome): SshTarget {
  const c = sshConfigFor(h.config, written.host);
  return {
    host: c.hostName ?? written.host,
    port: written.port ?? c.port ?? 22,
    user: written.user ?? c.user ?? h.user,
  };
}

/** The written `ssh` blocks of a site's nodes (the host as written: what `~/.ssh/config` entries match). */
export function writtenOf(
  nodes: Readonly<Record<string, { ssh?: { host: string; port: number; user: string; alias?: string } }>>,
): WrittenSsh[] {
  return Object.values(nodes).flatMap((n) =>
    n.ssh === undefined ? [] : [{ host: n.ssh.alias ?? n.ssh.host, port: n.ssh.port, user: n.ssh.user }],
  );
}

/** OpenSSH's default identities that ssh2 can use (its security-key types need the key's hardware). */
export const DEFAULT_IDENTITIES = ["id_rsa", "id_ecdsa", "id_ed25519"] as const;

/** A private key offered at a login, and where it came from ("sm121:sshPrivateKey", "~/.ssh/id_ed25519"). */
export interface KeyOffer {
  privateKey: string;
  from: string;
}

export interface LoginSources {
  /** The stack's secret sm121:sshPrivateKey. */
  stackKey?: string;
  /** sm121:sshPassphrase, else $SM121_SSH_PASSPHRASE: for the stack key and every key file. */
  passphrase?: string;
  /** A key file named for this run: --identity, else $SM121_SSH_KEY (ssh's -i). */
  identity?: string;
  /** $SSH_AUTH_SOCK. */
  agent?: string;
}

/** The keys and the agent of a login, in the order they are offered; the files left out, and why. */
export interface Login {
  /** Offered before the agent: the stack's secret. */
  first?: KeyOffer;
  agent?: string;
  /** Offered after the agent, in order. */
  files: KeyOffer[];
  /** Key files that exist and cannot be offered (unreadable, encrypted without the passphrase). */
  skipped: Msg[];
}

/** The sources of this process: the environment's agent, key file and passphrase. */
export function envSources(env: NodeJS.ProcessEnv, more: Omit<LoginSources, "agent"> = {}): LoginSources {
  const set = (v: string | undefined) => (v === undefined || v === "" ? undefined : v);
  const identity = more.identity ?? set(env["SM121_SSH_KEY"]);
  const passphrase = more.passphrase ?? set(env["SM121_SSH_PASSPHRASE"]);
  const agent = set(env["SSH_AUTH_SOCK"]);
  return {
    ...(more.stackKey !== undefined && { stackKey: more.stackKey }),
    ...(passphrase !== undefined && { passphrase }),
    ...(identity !== undefined && { identity }),
    ...(agent !== undefined && { agent }),
  };
}

/** `~/x` as the operator writes it (the home's own prefix shortened), for the words. */
function shown(file: string, home: string): string {
  return file.startsWith(`${home}/`) ? `~/${file.slice(home.length + 1)}` : file;
}

/** A key file path of ssh_config: `~`, %d (home), %u (local user), %h (host), %r (remote user), %%. */
function keyPath(p: string, h: LoginHome, host: string, user: string): string {
  const tokens = p.replace(/%(.)/g, (all, c: string) =>
    c === "d" ? h.home : c === "u" ? h.user : c === "h" ? host : c === "r" ? user : c === "%" ? "%" : all,
  );
  if (tokens === "~" || tokens.startsWith("~/")) return join(h.home, tokens.slice(1));
  return tokens.startsWith("/") ? tokens : join(h.home, ".ssh", tokens);
}

/** Why a key cannot be offered, or undefined when ssh2 reads it (with the passphrase, when given). */
function unusable(text: string, passphrase: string | undefined): string | undefined {
  // Loaded here, not at module scope: this module may be reached from a serialized provider.
  const { utils } = require("ssh2") as typeof import("ssh2");
  const parsed = utils.parseKey(text, passphrase);
  return parsed instanceof Error ? parsed.message : undefined;
}

/**
 * The login for the nodes whose `ssh` blocks are `written` (one login for them all: the key files
 * each node's `~/.ssh/config` entry names, in node order, then OpenSSH's defaults where an entry
 * names none).
 */
export function loginFor(s: LoginSources, written: readonly WrittenSsh[], h: LoginHome): Login {
  // Each file with whether its absence is worth a word: a file named for this run or in
  // ~/.ssh/config is; OpenSSH's defaults are tried only where they exist.
  const files: Array<{ file: string; named: boolean }> = [];
  if (s.identity !== undefined) files.push({ file: keyPath(s.identity, h, "", ""), named: true });
  let defaults = written.length === 0;
  let agentOff = written.length > 0;
  for (const w of written) {
    const c = sshConfigFor(h.config, w.host);
    const target = sshTarget(w, h);
    for (const f of c.identityFiles) files.push({ file: keyPath(f, h, target.host, target.user), named: true });
    if (c.identityFiles.length === 0) defaults = true;
    if (c.identitiesOnly !== true) agentOff = false;
  }
  if (defaults) for (const d of DEFAULT_IDENTITIES) files.push({ file: join(h.home, ".ssh", d), named: false });
  const skipped: Msg[] = [];
  const offers: KeyOffer[] = [];
  const seen = new Set<string>();
  for (const { file, named } of files) {
    if (seen.has(file)) continue;
    seen.add(file);
    if (!named && !existsSync(file)) continue;
    const said = shown(file, h.home);
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (e) {
      skipped.push(msg("login.keyUnreadable", { file: said, why: e instanceof Error ? e.message : String(e) }));
      continue;
    }
    const bad = unusable(text, s.passphrase);
    if (bad !== undefined) {
      skipped.push(msg("login.keyUnusable", { file: said, why: bad }));
      continue;
    }
    if (!offers.some((o) => o.privateKey === text)) offers.push({ privateKey: text, from: said });
  }
  return {
    ...(s.stackKey !== undefined && s.stackKey !== "" && { first: { privateKey: s.stackKey, from: STACK_KEY } }),
    ...(s.agent !== undefined && !agentOff && { agent: s.agent }),
    files: offers,
    skipped,
  };
}

/** Where the stack's key comes from, as the login says it. */
export const STACK_KEY = "sm121:sshPrivateKey";
/** Where the agent's keys come from, as the login says it. */
export const AGENT = "ssh-agent";

/** Every way a login offers, in order, as the words say them ("sm121:sshPrivateKey, ssh-agent, ~/.ssh/id_ed25519"). */
export function loginWays(l: Login): string[] {
  return [
    ...(l.first === undefined ? [] : [l.first.from]),
    ...(l.agent === undefined ? [] : [AGENT]),
    ...l.files.map((f) => f.from),
  ];
}

/** What a login gives a connection: the stack's key first, the agent ("" for none), the key files. */
export function loginAuth(
  l: Login,
  passphrase?: string,
): Pick<SshAuth, "privateKey" | "passphrase" | "agent" | "keyFiles"> {
  return {
    ...(l.first !== undefined && { privateKey: l.first.privateKey }),
    ...(passphrase !== undefined && passphrase !== "" && { passphrase }),
    agent: l.agent ?? "",
    keyFiles: l.files,
  };
}
