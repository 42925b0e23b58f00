/**
 * known_hosts as OpenSSH reads it. Each row's expected outcome is OpenSSH's: the host patterns are
 * checked against the real `ssh-keygen -F` in the same run, and the trust outcomes (ok, new,
 * changed, revoked) against the real `ssh` client connecting to a real sshd of the test site
 * (OpenSSH 9.2p1 here); sm121's verdict through ssh2 is checked on the same files.
 */
import { spawnSync } from "node:child_process";
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { connectSsh } from "../src/remote/ssh";
import { hostKeyStatus, hostMatches, hostPattern, verifyHostKey } from "../src/remote/knownhosts";
import { say } from "../src/text/messages";
import { sshScript } from "./site/exec";
import { killNodeSshd, restartNodeSshd } from "./site/faults";
import { startSite, type SimNode, type SimSite } from "./site/site";
import { endSite } from "./helpers/project";

const AT = allocate(__filename);

// Keys made with ssh-keygen; the hashed names with `ssh-keygen -H` (OpenSSH 9.2p1).
const KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKZ5kD2QS5g2YKw1RTh63qThuFOOFdqEqfAj2XHjOaEY";
const KEY_C = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIK+OVJ5xcsCR0Z9gEvd49xzqjRQLof/7kZY/KEUUXzg3";
const KEY_B =
  "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBOuwJaQUf6dPwPeaWPL+LVTYXPhhQpfiPSMC4XKt" +
  "wEDegC37jZk8+cU406a8pGwuprRkzCmIvUKHBzIG2WWqrAo=";
const HASHED_SPARK2 = "|1|WFouASf/L3XHxOX2zCkad0V+uY8=|vCFr+pij9CMPqHBJy7cfSp9IMDs=";
const HASHED_PORT = "|1|JpcQnYifs0TTrkvtQZis3kP0jrg=|3R3TaJQjsIqkrzzVFd2L+iBNmSA=";
const blob = (key: string) => Buffer.from(key.split(" ")[1] ?? "", "base64");

/** [host field of the line, the name looked up, whether OpenSSH finds the line]. */
const PATTERNS: ReadonlyArray<readonly [string, string, boolean]> = [
  ["spark2.example.org", "spark2.example.org", true],
  ["spark*", "spark2.example.org", true],
  ["spark?.example.org", "spark2.example.org", true],
  ["spark?.example.org", "spark12.example.org", false],
  ["*.example.org,!spark2.example.org", "spark2.example.org", false],
  ["*.example.org,!spark2.example.org", "spark3.example.org", true],
  ["!spark2.example.org,*.example.org", "spark2.example.org", false],
  ["SPARK2.Example.org", "spark2.example.org", true],
  ["[203.0.113.12]:2222", "[203.0.113.12]:2222", true],
  ["203.0.113.12", "[203.0.113.12]:2222", false],
  ["[203.0.113.*]:2222", "[203.0.113.12]:2222", true],
  ["[203.0.113.12]:22", "203.0.113.12", false],
  ["203.0.113.1?", "203.0.113.12", true],
  ["*", "anything", true],
  ["a,,b", "b", true],
  [HASHED_SPARK2, "spark2.example.org", true],
  [HASHED_SPARK2, "spark3.example.org", false],
  [HASHED_PORT, "[203.0.113.12]:2222", true],
  [HASHED_PORT, "203.0.113.12", false],
  [`${HASHED_SPARK2},spark3.example.org`, "spark3.example.org", false],
];

describe("host patterns, as `ssh-keygen -F` finds them", () => {
  const dir = mkdtempSync(join(tmpdir(), "sm121-kh-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each(PATTERNS)("%s looked up as %s: %s", (hosts, name, found) => {
    expect(hostMatches(hosts, name)).toBe(found);
    const file = join(dir, "known_hosts");
    writeFileSync(file, `${hosts} ${KEY_A}\n`);
    expect(spawnSync("ssh-keygen", ["-F", name, "-f", file]).status).toBe(found ? 0 : 1);
  });

  it("files a port other than 22 as [host]:port, lower-case as ssh does", () => {
    expect([hostPattern("Spark2.Example.org", 22), hostPattern("203.0.113.12", 2222)]).toEqual([
      "spark2.example.org",
      "[203.0.113.12]:2222",
    ]);
  });
});

describe("which key is trusted", () => {
  const name = "[203.0.113.12]:2222";
  const status = (lines: string[]) => hostKeyStatus(`${lines.join("\n")}\n`, name, blob(KEY_A)).status;

  it("plain and hashed entries with the key: ok; another key of any type for the name: changed", () => {
    expect(status([`${name} ${KEY_A}`])).toBe("ok");
    expect(status([`${HASHED_PORT} ${KEY_A}`])).toBe("ok");
    expect(status([`${name} ${KEY_C}`])).toBe("changed");
    expect(status([`${name} ${KEY_B}`])).toBe("changed");
    expect(status([`${name} ${KEY_C}`, `${name} ${KEY_A}`])).toBe("ok");
    expect(status([`other.example.org ${KEY_A}`])).toBe("new");
  });

  it("@revoked refuses the key even when another line accepts it", () => {
    expect(status([`${name} ${KEY_A}`, `@revoked * ${KEY_A}`])).toBe("revoked");
    expect(status([`@revoked * ${KEY_C}`, `${name} ${KEY_A}`])).toBe("ok");
    expect(status([`@revoked other.example.org ${KEY_A}`, `${name} ${KEY_A}`])).toBe("ok");
  });

  it("@cert-authority signs certificates: a plain host key that only a CA line names is not trusted", () => {
    expect(status([`@cert-authority ${name} ${KEY_A}`])).toBe("new");
    expect(status([`@cert-authority * ${KEY_C}`, `${name} ${KEY_A}`])).toBe("ok");
  });

  it("skips what ssh cannot parse: an unknown marker, two markers, a type that is not the key's", () => {
    expect(status([`@trusted ${name} ${KEY_A}`])).toBe("new");
    expect(status([`@revoked @cert-authority ${name} ${KEY_A}`])).toBe("new");
    expect(status([`${name} ssh-rsa ${KEY_A.split(" ")[1] ?? ""}`])).toBe("new");
    expect(status([`# ${name} ${KEY_A}`, "", `  ${name} ${KEY_A} a comment\r`])).toBe("ok");
  });
});

describe.sequential("against OpenSSH's ssh and sm121's ssh2 on a real sshd", () => {
  let site: SimSite;
  let node: SimNode;
  let hostKey = "";
  let name = "";
  let n = 0;
  const file = () => join(site.dir, `kh-${++n}`);

  /** OpenSSH's verdict: what `ssh` (StrictHostKeyChecking=yes) does with this file. */
  async function openssh(kh: string): Promise<string> {
    const r = await sshScript(site, node, "echo reached", { knownHosts: kh });
    if (r.code === 0 && r.stdout === "reached\n") return "ok";
    if (r.stderr.includes("REVOKED HOST KEY DETECTED")) return "revoked";
    if (r.stderr.includes("REMOTE HOST IDENTIFICATION HAS CHANGED")) return "changed";
    if (/No ED25519 host key is known for/.test(r.stderr)) return "new";
    return `unexpected: ${r.stderr}`;
  }

  /** sm121's verdict through ssh2, strict. */
  async function sm121(kh: string, hostKeys: "strict" | "accept-new" = "strict"): Promise<string> {
    try {
      const h = await connectSsh(
        { node: "k1", host: node.ip, port: node.sshPort, user: site.user },
        { knownHosts: kh, hostKeys, privateKey: readFileSync(site.clientKey, "utf8"), dialAttempts: 1 },
      );
      h.close();
      return "ok";
    } catch (e) {
      const m = e instanceof Error ? e.message : String(e);
      return /marked @revoked/.test(m)
        ? "revoked"
        : /has CHANGED/.test(m)
          ? "changed"
          : /is not in/.test(m)
            ? "new"
            : `unexpected: ${m}`;
    }
  }

  beforeAll(async () => {
    site = await startSite({
      dir: join(tmpdir(), `sm121-kh-site-${process.pid}`),
      nodes: ["k1"],
      ...AT.site(),
    });
    node = site.nodes[0] as SimNode;
    hostKey = readFileSync(join(node.root, "etc", "ssh", "ssh_host_ed25519_key.pub"), "utf8")
      .split(" ")
      .slice(0, 2)
      .join(" ");
    name = hostPattern(node.ip, node.sshPort);
  });
  afterAll(async () => {
    await endSite(site);
  });

  const net = () => node.ip.split(".").slice(0, 3).join(".");
  const CASES: ReadonlyArray<readonly [string, () => string[], string]> = [
    ["plain", () => [`${name} ${hostKey}`], "ok"],
    ["plain, another ed25519 key", () => [`${name} ${KEY_C}`], "changed"],
    ["plain, a key of another type", () => [`${name} ${KEY_B}`], "changed"],
    ["wildcard *", () => [`[${net()}.*]:${node.sshPort} ${hostKey}`], "ok"],
    ["wildcard ?", () => [`[${node.ip.slice(0, -1)}?]:${node.sshPort} ${hostKey}`], "ok"],
    ["negated", () => [`[${net()}.*]:${node.sshPort},!${name} ${hostKey}`], "new"],
    ["the bare host (port 22 form) for another port", () => [`${node.ip} ${hostKey}`], "ok"],
    ["[host]:another port", () => [`[${node.ip}]:22 ${hostKey}`], "new"],
    ["@revoked beside an accepting line", () => [`${name} ${hostKey}`, `@revoked * ${hostKey}`], "revoked"],
    ["@cert-authority only", () => [`@cert-authority ${name} ${hostKey}`], "new"],
  ];

  it.each(CASES)("%s", async (_, lines, outcome) => {
    const kh = file();
    writeFileSync(kh, `${lines().join("\n")}\n`);
    expect(await openssh(kh)).toBe(outcome);
    expect(await sm121(kh)).toBe(outcome);
  });

  it("hashed (by ssh-keygen -H)", async () => {
    const kh = file();
    writeFileSync(kh, `${name} ${hostKey}\n`);
    expect(spawnSync("ssh-keygen", ["-H", "-f", kh]).status).toBe(0);
    expect(readFileSync(kh, "utf8")).toMatch(/^\|1\|/);
    expect(await openssh(kh)).toBe("ok");
    expect(await sm121(kh)).toBe("ok");
  });

  it("accept-new records an unknown key, refuses a revoked one and a changed one", async () => {
    const fresh = file();
    expect(await sm121(fresh, "accept-new")).toBe("ok");
    expect(readFileSync(fresh, "utf8")).toBe(`${name} ${hostKey}\n`);
    expect(await openssh(fresh)).toBe("ok");
    const revoked = file();
    writeFileSync(revoked, `@revoked * ${hostKey}\n`);
    expect(await sm121(revoked, "accept-new")).toBe("revoked");
    expect(readFileSync(revoked, "utf8")).toBe(`@revoked * ${hostKey}\n`);
    const changed = file();
    writeFileSync(changed, `${name} ${KEY_C}\n`);
    expect(await sm121(changed, "accept-new")).toBe("changed");
  });

  // It gives the node a second host key: it stays after every test that expects only the first.
  it("a host known by one key is asked for that one (ssh's order_hostkeyalgs), not taken for changed", async () => {
    const ecdsa = join(node.root, "etc", "ssh", "ssh_host_ecdsa_key");
    spawnSync("ssh-keygen", ["-q", "-t", "ecdsa", "-N", "", "-C", "k1-ecdsa", "-f", ecdsa]);
    const cfg = join(node.root, "etc", "ssh", "sshd_config");
    writeFileSync(cfg, readFileSync(cfg, "utf8").replace(/^(HostKey .*)$/m, `$1\nHostKey ${ecdsa}`));
    killNodeSshd(site, node);
    await restartNodeSshd(site, node);
    const kh = file();
    writeFileSync(kh, `${name} ${readFileSync(`${ecdsa}.pub`, "utf8").split(" ").slice(0, 2).join(" ")}\n`);
    expect(await openssh(kh)).toBe("ok");
    expect(await sm121(kh)).toBe("ok");
    // Both keys known: either is fine; an unknown third type changes nothing.
    appendFileSync(kh, `${name} ${hostKey}\n`);
    expect(await sm121(kh)).toBe("ok");
  });

  it("a refusal names the file's line and the fix", () => {
    const kh = file();
    writeFileSync(kh, `# ops\n${name} ${KEY_B}\n`);
    const v = verifyHostKey(kh, node.ip, node.sshPort, blob(hostKey), "strict");
    expect(v).toMatchObject({ ok: false });
    expect(v.ok ? "" : say(v.reason, "en")).toMatch(
      new RegExp(
        `^the ssh-ed25519 host key of \\[${node.ip.replace(/\./g, "\\.")}\\]:${node.sshPort} has CHANGED \\(now ` +
          `SHA256:\\S+; ${kh.replace(/[/.]/g, "\\$&")}:2 has ecdsa-sha2-nistp256 SHA256:\\S+\\)`,
      ),
    );
  });
});
