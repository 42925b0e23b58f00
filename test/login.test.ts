/**
 * One way to log in (src/remote/login.ts), for the CLI, the program and the providers: where a
 * node's `ssh` block leads with `~/.ssh/config` (HostName, User, Port), and which keys are offered
 * in which order (the stack's secret, ssh-agent, the key files OpenSSH would try), on an
 * operator's home made for each case.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli/args";
import { cliAuth } from "../src/cli/connect";
import { loadProject } from "../src/project";
import {
  loginFor,
  loginHome,
  loginWays,
  sshConfigFor,
  sshTarget,
  writtenOf,
  type LoginHome,
} from "../src/remote/login";
import { ed25519Pair } from "../src/remote/keypair";
import { say } from "../src/text/messages";
import { testDir } from "./helpers/tmp";

/** A private key's text; with a passphrase, as OpenSSH's ssh-keygen encrypts it. */
function key(passphrase?: string): string {
  if (passphrase === undefined) return ed25519Pair().private;
  const file = join(testDir("sm121-login-key-"), "k");
  const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-a", "2", "-N", passphrase, "-f", file], {
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`ssh-keygen: ${r.stderr}`);
  return readFileSync(file, "utf8");
}

/** An operator's home with `files` under it (paths relative to the home). */
function home(files: Record<string, string>): LoginHome {
  const dir = testDir("sm121-login-");
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(join(dir, f, ".."), { recursive: true });
    writeFileSync(join(dir, f), text);
  }
  return loginHome(dir);
}

const CONFIG = [
  "# the operator's aliases",
  "Host spark?",
  "  HostName 10.0.0.1%h",
  "  User ops",
  "Host spark1",
  "  Port 2222",
  "  User ignored-second-value",
  "  IdentityFile ~/.ssh/sparks_ed25519",
  "Host * !gateway",
  "  Port 22",
  'Host "gateway"',
  "  HostName=gw.example",
  "Match host spark2",
  "  User from-a-match-block",
].join("\n");

describe("~/.ssh/config", () => {
  it("gives each option's first value of the entries that match, as ssh_config(5) reads them", () => {
    expect(sshConfigFor(CONFIG, "spark1")).toEqual({
      hostName: "10.0.0.1spark1",
      entry: "Host spark?",
      user: "ops",
      port: 2222,
      identityFiles: ["~/.ssh/sparks_ed25519"],
    });
    // Negated patterns exclude; Match blocks are not taken.
    expect(sshConfigFor(CONFIG, "gateway")).toEqual({
      hostName: "gw.example",
      entry: "Host gateway",
      identityFiles: [],
    });
    expect(sshConfigFor(CONFIG, "spark2").user).toBe("ops");
    expect(sshConfigFor(CONFIG, "other")).toEqual({ port: 22, identityFiles: [] });
    expect(sshConfigFor("", "spark1")).toEqual({ identityFiles: [] });
  });

  it("fills what the site leaves out; what the site writes wins, as on ssh's command line", () => {
    const h = { home: "/home/me", user: "me", config: CONFIG };
    expect(sshTarget({ host: "spark1" }, h)).toEqual({ host: "10.0.0.1spark1", port: 2222, user: "ops" });
    expect(sshTarget({ host: "spark1", port: 22, user: "root" }, h)).toEqual({
      host: "10.0.0.1spark1",
      port: 22,
      user: "root",
    });
    // No entry: port 22 and the local user, as ssh.
    expect(sshTarget({ host: "10.9.9.9" }, { ...h, config: "" })).toEqual({ host: "10.9.9.9", port: 22, user: "me" });
  });

  it("resolves the site's nodes when the project is loaded, for the CLI and the program alike", () => {
    const h = home({ ".ssh/config": "Host spark1\n  HostName 127.0.0.9\n  User ops\n  Port 2200\n" });
    const dir = testDir("sm121-login-project-");
    mkdirSync(join(dir, "recipes"));
    writeFileSync(join(dir, "recipes", "r.toml"), 'model = "m/x"\nimage = "vllm/vllm-openai:v0.11.1"\nport = 8000\n');
    writeFileSync(
      join(dir, "Pulumi.s.yaml"),
      "config:\n  sm121:nodes:\n    spark1: { ssh: { host: spark1 }, ip: 10.0.0.11 }\n" +
        "  sm121:deployments:\n    - { recipe: r, nodes: [spark1] }\n",
    );
    const p = loadProject(dir, "s", undefined, h);
    expect(p.site.nodes["spark1"]?.ssh).toEqual({ host: "127.0.0.9", port: 2200, user: "ops", alias: "spark1" });
    expect(p.bundles[0]?.nodes[0]?.conn).toEqual({ kind: "ssh", host: "127.0.0.9", port: 2200, user: "ops" });
    expect(writtenOf(p.site.nodes)).toEqual([{ host: "spark1", port: 2200, user: "ops" }]);
  });
});

describe("the keys a login offers", () => {
  const stackKey = key();
  const sparks = key();
  const ed = key();
  const rsa = key();

  it("offers the stack's secret, then ssh-agent, then the key files OpenSSH would try", () => {
    const h = home({ ".ssh/id_ed25519": ed, ".ssh/id_rsa": rsa });
    const l = loginFor({ stackKey, agent: "/run/agent.sock" }, [{ host: "10.0.0.11" }], h);
    expect(loginWays(l)).toEqual(["sm121:sshPrivateKey", "ssh-agent", "~/.ssh/id_rsa", "~/.ssh/id_ed25519"]);
    expect(l.first?.privateKey).toBe(stackKey);
    expect(l.files.map((f) => f.privateKey)).toEqual([rsa, ed]);
    // Nothing else: the default files only, the agent only when there is one.
    expect(loginWays(loginFor({}, [{ host: "10.0.0.11" }], h))).toEqual(["~/.ssh/id_rsa", "~/.ssh/id_ed25519"]);
    expect(loginWays(loginFor({}, [{ host: "10.0.0.11" }], home({})))).toEqual([]);
  });

  it("takes a host's IdentityFile instead of the defaults, and a file named for the run before both", () => {
    const h = home({
      ".ssh/config": "Host spark1\n  IdentityFile ~/.ssh/sparks_ed25519\n  IdentitiesOnly yes\n",
      ".ssh/sparks_ed25519": sparks,
      ".ssh/id_ed25519": ed,
      "keys/run": rsa,
    });
    expect(loginWays(loginFor({ agent: "/a" }, [{ host: "spark1" }], h))).toEqual(["~/.ssh/sparks_ed25519"]);
    // A node without an entry brings the defaults (and the agent) back.
    expect(loginWays(loginFor({ agent: "/a" }, [{ host: "spark1" }, { host: "other" }], h))).toEqual([
      "ssh-agent",
      "~/.ssh/sparks_ed25519",
      "~/.ssh/id_ed25519",
    ]);
    const run = loginFor({ identity: "~/keys/run" }, [{ host: "spark1" }], h);
    expect(loginWays(run)).toEqual(["~/keys/run", "~/.ssh/sparks_ed25519"]);
  });

  it("leaves out a key it cannot use, and says why and how to fix it", () => {
    const h = home({ ".ssh/id_ed25519": key("pw"), ".ssh/config": "Host n\n  IdentityFile ~/.ssh/gone\n" });
    const l = loginFor({}, [{ host: "n" }, { host: "m" }], h);
    expect(loginWays(l)).toEqual([]);
    const said = l.skipped.map((m) => say(m, "en"));
    expect(said[0]).toMatch(/^~\/\.ssh\/gone cannot be read \(ENOENT/);
    expect(said[1]).toMatch(/^~\/\.ssh\/id_ed25519 cannot be used \(.*\): an encrypted key needs sm121:sshPassphrase/);
    expect(said[1]).toContain("ssh-add ~/.ssh/id_ed25519");
    // With its passphrase it is offered.
    expect(loginWays(loginFor({ passphrase: "pw" }, [{ host: "m" }], h))).toEqual(["~/.ssh/id_ed25519"]);
  });

  it("is the CLI's login: --identity and $SM121_SSH_KEY name a file, the stack's key comes first", () => {
    const h = home({ ".ssh/id_ed25519": ed, a: rsa, b: sparks });
    chmodSync(join(h.home, "a"), 0o600);
    const site = { knownHosts: "~/.ssh/known_hosts", hostKeys: "strict" as const, nodes: {} };
    const args = (a: string[]) => parseArgs(a, { identity: "string" });
    const env = { HOME: h.home, SSH_AUTH_SOCK: "/run/agent.sock", SM121_SSH_KEY: join(h.home, "b") };
    const withFlag = cliAuth(site, args(["--identity", join(h.home, "a")]), env);
    expect(loginWays(withFlag.login)).toEqual([
      "ssh-agent",
      join(h.home, "a").replace(h.home, "~"),
      "~/.ssh/id_ed25519",
    ]);
    expect(withFlag.auth).toMatchObject({
      agent: "/run/agent.sock",
      keyFiles: [{ privateKey: rsa }, { privateKey: ed }],
    });
    const secrets: Record<string, string> = { "sm121:sshPrivateKey": stackKey, "sm121:sshPassphrase": "pw" };
    const stacked = cliAuth(site, args([]), env, { secret: (k) => secrets[k] });
    expect(loginWays(stacked.login)).toEqual(["sm121:sshPrivateKey", "ssh-agent", "~/b", "~/.ssh/id_ed25519"]);
    expect(stacked.auth).toMatchObject({ privateKey: stackKey, passphrase: "pw" });
    expect(() => cliAuth(site, args([]), { ...env, SM121_SSH_KEY: join(h.home, "missing"), SM121_LANG: "en" })).toThrow(
      /\$SM121_SSH_KEY: cannot read the private key .*missing/,
    );
  });
});
