/**
 * The ssh transport against a real sshd of the test site: output decoded as UTF-8 across packets,
 * a streamed run that stays small, a timeout reported as such with both tails, and a connection
 * lost in the middle of a step reported as a transport failure. And against an in-process server
 * that records each login attempt: the key goes first, without ssh2's "none" probe.
 */
import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Server } from "ssh2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { CommandError, TransportError, type Host } from "../src/remote";
import { transportFix } from "../src/remote/errors";
import { ed25519Pair } from "../src/remote/keypair";
import { connectSsh } from "../src/remote/ssh";
import { say } from "../src/text/messages";
import { startSite, type SimNode, type SimSite } from "./site/site";
import { matching } from "./helpers/json";
import { endSite } from "./helpers/project";

const AT = allocate(__filename);

describe("the ssh transport", () => {
  let site: SimSite;
  let node: SimNode;
  const connect = (): Promise<Host> =>
    connectSsh(
      { node: "s1", host: node.ip, port: node.sshPort, user: site.user },
      {
        knownHosts: site.knownHosts,
        hostKeys: "strict",
        privateKey: readFileSync(site.clientKey, "utf8"),
        dialAttempts: 1,
      },
    );

  beforeAll(async () => {
    site = await startSite({
      dir: join(tmpdir(), `sm121-ssh-site-${process.pid}`),
      nodes: ["s1"],
      ...AT.site(),
    });
    node = site.nodes[0] as SimNode;
  });
  afterAll(async () => {
    await endSite(site);
  });

  it("keeps a character whole when its bytes arrive in two packets", async () => {
    const h = await connect();
    try {
      const lines: string[] = [];
      const r = await h.run(
        "printf '\\xe2\\x82'; sleep 0.3; printf '\\xac ok\\n'; printf '\\xe2' >&2; sleep 0.3; printf '\\x9c\\x93' >&2",
        { step: "utf8", onLine: (l) => lines.push(l) },
      );
      expect(lines).toEqual(["€ ok"]);
      expect(r.stderr).toBe("✓");
    } finally {
      h.close();
    }
  });

  it("a streamed run passes every line on and keeps only a bounded tail", async () => {
    const h = await connect();
    try {
      let n = 0;
      const r = await h.run("seq 1 300000", { step: "logs", onLine: () => n++ });
      expect(n).toBe(300_000);
      expect(r.stdout.length).toBeLessThanOrEqual(32 * 1024);
      expect(r.stdout.endsWith("\n299999\n300000\n")).toBe(true);
    } finally {
      h.close();
    }
  });

  it("a timeout says so, with the step and both tails", async () => {
    const h = await connect();
    try {
      const run = h.run("echo started; echo 'still loading' >&2; sleep 30", { step: "readiness", timeoutMs: 1000 });
      await expect(run).rejects.toBeInstanceOf(CommandError);
      // The site's sshd runs a forced command, which refuses signals: the channel is closed instead.
      await expect(run).rejects.toHaveProperty(
        "message",
        "node s1: readiness timed out after 1 s; its channel was closed without an exit status " +
          "(the node may still be running it)\n--- stderr (last lines) ---\nstill loading\n" +
          "--- stdout (last lines) ---\nstarted",
      );
    } finally {
      h.close();
    }
  });

  it("a connection lost during a step is a transport failure naming node and step", async () => {
    const h = await connect();
    const run = h.run("echo started; sleep 30", { step: "write", onLine: () => h.close() });
    await expect(run).rejects.toBeInstanceOf(TransportError);
    await expect(run).rejects.toThrow(/^node s1: write: the connection was lost before the step ended; /);
  });
});

describe("why a node cannot be reached, as the SSH client saw it", () => {
  let site: SimSite;
  let node: SimNode;
  const key = () => readFileSync(site.clientKey, "utf8");
  /** The failure of one dial, with its kind and the fix the plan-time look prints for it. */
  type Auth = Partial<Parameters<typeof connectSsh>[1]>;
  const failure = async (target: { host?: string; port?: number; user?: string }, auth: Auth = {}) => {
    const to = { node: "s1", host: node.ip, port: node.sshPort, user: site.user, ...target };
    const dial = connectSsh(to, {
      knownHosts: site.knownHosts,
      hostKeys: "strict",
      privateKey: key(),
      dialAttempts: 1,
      ...auth,
    });
    const e = await dial.then(
      () => undefined,
      (x: unknown) => x,
    );
    if (!(e instanceof TransportError)) throw new Error(`not a TransportError: ${String(e)}`);
    return { kind: e.kind, detail: say(e.detail, "en"), fix: say(transportFix(e.kind, "s1"), "en") };
  };

  beforeAll(async () => {
    const dir = join(tmpdir(), `sm121-ssh-kinds-${process.pid}`);
    site = await startSite({ dir, nodes: ["s1"], ...AT.site(1) });
    node = site.nodes[0] as SimNode;
  });
  afterAll(async () => {
    await endSite(site);
  });

  const at = (offset = 0) => `${node.ip}:${node.sshPort + offset}`;

  it("a wrong user: the login refused, check ssh.user and authorized_keys", async () => {
    expect(await failure({ user: "nobody-here" })).toEqual({
      kind: "auth",
      detail: `the login as nobody-here@${at()} was refused (All configured authentication methods failed)`,
      fix:
        "check ssh.user, and that a key sm121 logs in with (sm121:sshPrivateKey, ssh-agent, then ~/.ssh/config's " +
        "IdentityFile or ~/.ssh/id_*; sm121 doctor names them) is in that user's ~/.ssh/authorized_keys on s1",
    });
  });

  it("nothing listening on the port: refused, check sshd and ssh.port", async () => {
    expect(await failure({ port: node.sshPort + 1 })).toEqual({
      kind: "refused",
      detail: `connection to ${site.user}@${at(1)} refused (connect ECONNREFUSED ${at(1)})`,
      fix: "check that sshd runs on s1 and listens on ssh.port",
    });
  });

  it("a refused dial is tried again, saying what the next one waits for; a refused login is not", async () => {
    const said: string[] = [];
    const onRetry = (m: string) => said.push(m);
    expect((await failure({ port: node.sshPort + 1 }, { dialAttempts: 2, onRetry })).kind).toBe("refused");
    expect(said).toEqual([
      `s1: dial 1 of 2 failed (connection to ${site.user}@${at(1)} refused (connect ECONNREFUSED ${at(1)})); ` +
        "dialling again in 300 ms, for its sshd to answer",
    ]);
    expect((await failure({ user: "nobody-here" }, { dialAttempts: 2, onRetry })).kind).toBe("auth");
    expect(said.length).toBe(1);
  });

  it("a host name nobody resolves: not found, fix ssh.host", async () => {
    const f = await failure({ host: "spark-typo.invalid" });
    expect(f.kind).toBe("not-found");
    const seen = "\\(getaddrinfo (ENOTFOUND|EAI_AGAIN) spark-typo\\.invalid\\)";
    const host = `${site.user}@spark-typo\\.invalid:${node.sshPort}`;
    expect(f.detail).toMatch(new RegExp(`^host name of ${host} not found ${seen}$`));
    expect(f.fix).toBe("fix ssh.host: a name this machine resolves, or the node's address");
  });

  it("a node that accepts the connection and never speaks SSH: timed out", async () => {
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, node.ip, resolve));
    try {
      const port = (silent.address() as AddressInfo).port;
      expect(await failure({ port }, { dialTimeoutMs: 500 })).toEqual({
        kind: "timeout",
        detail:
          `${site.user}@${node.ip}:${port} did not complete the SSH handshake in time ` +
          "(Timed out while waiting for handshake)",
        fix:
          "check that s1 is on and reachable from this machine, and ssh.host and ssh.port; " +
          "run again when it answers",
      });
    } finally {
      silent.close();
    }
  });

  it("a host key known_hosts does not hold, and a key sm121 cannot read", async () => {
    const empty = join(site.dir, "no-known-hosts");
    writeFileSync(empty, "");
    const hostKey = await failure({}, { knownHosts: empty });
    expect(hostKey.kind).toBe("host-key");
    const ip = node.ip.replace(/\./g, "\\.");
    const port = node.sshPort;
    const refused = `^host key refused for ${site.user}@${ip}:${port}: `;
    expect(hostKey.detail).toMatch(new RegExp(`${refused}\\[${ip}\\]:${port} is not in `));
    const notAKey = "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-key\n-----END OPENSSH PRIVATE KEY-----\n";
    const bad = await failure({}, { privateKey: notAKey });
    const unusable = /^the private key cannot be used \(Cannot parse privateKey/;
    expect(bad).toMatchObject({ kind: "key", detail: matching(unusable) });
    expect(bad.fix).toContain("set sm121:sshPrivateKey to an OpenSSH or PEM private key");
  });
});

describe("the ssh login", () => {
  it('offers the key (or the agent\'s) first: no "none" try, a round trip a key-only node refuses anyway', async () => {
    const hostKey = ed25519Pair();
    const client = ed25519Pair();
    const methods: string[] = [];
    const server = new Server({ hostKeys: [hostKey.private] }, (conn) => {
      conn.on("authentication", (ctx) => {
        methods.push(ctx.method);
        if (ctx.method === "publickey") ctx.accept();
        else ctx.reject(["publickey"]);
      });
      conn.on("ready", () => conn.end());
      conn.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const dir = mkdtempSync(join(tmpdir(), "sm121-ssh-login-"));
    const sock = join(dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", sock], { stdio: "ignore" });
    try {
      const port = (server.address() as AddressInfo).port;
      const knownHosts = join(dir, "known_hosts");
      writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostKey.public.split(" ").slice(0, 2).join(" ")}\n`);
      const login = async (auth: { privateKey: string } | { agent: string }) => {
        methods.length = 0;
        (
          await connectSsh(
            { node: "x1", host: "127.0.0.1", port, user: "ops" },
            { knownHosts, hostKeys: "strict", dialAttempts: 1, ...auth },
          )
        ).close();
        return [...methods];
      };
      // ssh2 asks whether the key is acceptable, then signs: both are publickey attempts.
      expect(await login({ privateKey: client.private })).toEqual(["publickey", "publickey"]);
      const keyFile = join(dir, "id_ed25519");
      writeFileSync(keyFile, client.private, { mode: 0o600 });
      for (let i = 0; i < 50 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
      const added = spawnSync("ssh-add", [keyFile], { env: { ...process.env, SSH_AUTH_SOCK: sock }, encoding: "utf8" });
      expect(added.status, added.stderr).toBe(0);
      expect(await login({ agent: sock })).toEqual(["publickey", "publickey"]);
    } finally {
      agent.kill();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("offers the stack's key, then the agent's, then the key files, and says which one logged in", async () => {
    const hostKey = ed25519Pair();
    const [stack, agentKey, fileA, fileB] = [0, 1, 2, 3].map(() => ed25519Pair());
    const blob = (pub: string) => pub.split(" ")[1] ?? "";
    const accepted = blob(fileB?.public ?? "");
    const offered: string[] = [];
    const server = new Server({ hostKeys: [hostKey.private] }, (conn) => {
      conn.on("authentication", (ctx) => {
        if (ctx.method !== "publickey") return ctx.reject(["publickey"]);
        const b = ctx.key.data.toString("base64");
        if (ctx.signature === undefined) offered.push(b);
        if (b === accepted) ctx.accept();
        else ctx.reject(["publickey"]);
      });
      conn.on("ready", () => conn.end());
      conn.on("error", () => undefined);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const dir = mkdtempSync(join(tmpdir(), "sm121-ssh-order-"));
    const sock = join(dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-D", "-a", sock], { stdio: "ignore" });
    try {
      const port = (server.address() as AddressInfo).port;
      const knownHosts = join(dir, "known_hosts");
      writeFileSync(knownHosts, `[127.0.0.1]:${port} ${hostKey.public.split(" ").slice(0, 2).join(" ")}\n`);
      const agentFile = join(dir, "agent_ed25519");
      writeFileSync(agentFile, agentKey?.private ?? "", { mode: 0o600 });
      for (let i = 0; i < 50 && !existsSync(sock); i++) await new Promise((r) => setTimeout(r, 20));
      const added = spawnSync("ssh-add", [agentFile], {
        env: { ...process.env, SSH_AUTH_SOCK: sock },
        encoding: "utf8",
      });
      expect(added.status, added.stderr).toBe(0);
      const h = await connectSsh(
        { node: "x1", host: "127.0.0.1", port, user: "ops" },
        {
          knownHosts,
          hostKeys: "strict",
          dialAttempts: 1,
          privateKey: stack?.private ?? "",
          agent: sock,
          keyFiles: [
            { privateKey: fileA?.private ?? "", from: "~/.ssh/id_rsa" },
            { privateKey: fileB?.private ?? "", from: "~/.ssh/id_ed25519" },
          ],
        },
      );
      h.close();
      expect(h.login).toBe("~/.ssh/id_ed25519");
      expect(offered).toEqual([stack, agentKey, fileA, fileB].map((k) => blob(k?.public ?? "")));
    } finally {
      agent.kill();
      server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
