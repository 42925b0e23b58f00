// One OpenSSH sshd per simulated node: keys, sshd_config, start and readiness.
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { spawn, spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import { isAlive, procStat, registeredProcesses, type ProcRecord } from "./procs";

export const SSHD = "/usr/sbin/sshd";
const SFTP_SERVER = "/usr/lib/openssh/sftp-server";

export function keygen(file: string, comment: string): string {
  fs.rmSync(file, { force: true });
  fs.rmSync(`${file}.pub`, { force: true });
  const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", comment, "-f", file], { encoding: "utf8" });
  if (r.status !== 0)
    throw new Error(`test site: ssh-keygen for ${file} failed: ${r.stderr || (r.error?.message ?? "")}`);
  fs.chmodSync(file, 0o600);
  return fs.readFileSync(`${file}.pub`, "utf8").trim();
}

/** "[ip]:port type key" as ssh writes known_hosts entries for non-22 ports. */
export function knownHostsLine(ip: string, port: number, pubKey: string): string {
  const [type = "", key = ""] = pubKey.split(" ");
  return `${port === 22 ? ip : `[${ip}]:${port}`} ${type} ${key}`;
}

export interface SshdConfigInput {
  name: string;
  ip: string;
  port: number;
  root: string;
  user: string;
  authorizedKeys: string;
  env: Record<string, string>;
}

export function sshdConfig(c: SshdConfigInput): string {
  const setEnv = Object.entries(c.env)
    .map(([k, v]) => `${k}=${v}`)
    .join(" ");
  return [
    `# sshd of simulated node ${c.name} (written by test/site/site.ts)`,
    `ListenAddress ${c.ip}:${c.port}`,
    `HostKey ${c.root}/etc/ssh/ssh_host_ed25519_key`,
    `PidFile ${c.root}/var/run/sshd.pid`,
    `AuthorizedKeysFile ${c.authorizedKeys}`,
    "StrictModes no",
    "UsePAM no",
    "PasswordAuthentication no",
    "KbdInteractiveAuthentication no",
    "PubkeyAuthentication yes",
    "PermitRootLogin prohibit-password",
    `AllowUsers ${c.user}`,
    "PrintMotd no",
    "PrintLastLog no",
    "UseDNS no",
    "MaxStartups 200:30:400",
    "MaxSessions 100",
    "LogLevel INFO",
    `Subsystem sftp ${SFTP_SERVER}`,
    // sessions start in the node's $HOME, not the passwd home (see shims/sim-login); the key that
    // logged in is named to it, so that it runs that key's command= as sshd would
    "ExposeAuthInfo yes",
    `ForceCommand ${c.root}/bin/sim-login`,
    `SetEnv ${setEnv}`,
    "",
  ].join("\n");
}

/** sshd refuses to start as root without its privilege separation directory. */
export function ensurePrivsepDir(): void {
  if (process.getuid?.() === 0) fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
}

export function checkConfig(cfg: string): void {
  const r = spawnSync(SSHD, ["-t", "-f", cfg], { encoding: "utf8" });
  if (r.status !== 0) throw new Error(`test site: sshd -t -f ${cfg} rejected the config: ${r.stderr}`);
}

let noReexec: boolean | undefined;

/**
 * `-r` when this sshd takes it: sshd then serves each connection from a fork of the listener
 * instead of executing itself again. The re-exec re-randomizes each connection's address space,
 * which a simulated node on loopback does not need, and it costs about 12 ms of CPU a connection
 * on the cores every node shares here (a node of a cluster pays it on its own CPU).
 */
function reexecFlags(cfg: string): string[] {
  noReexec ??= spawnSync(SSHD, ["-r", "-t", "-f", cfg], { encoding: "utf8" }).status === 0;
  return noReexec ? ["-r"] : [];
}

/** A node's sshd_config (site.ts writes it; startSshd names its process by it). */
export function sshdConfigPath(root: string): string {
  return path.join(root, "etc", "ssh", "sshd_config");
}

/** The live sshd listener of the node at `root`, as the site recorded it under <site>/run/procs. */
export function sshdListeners(siteDir: string, root: string): ProcRecord[] {
  const what = `sshd -f ${sshdConfigPath(root)}`;
  return registeredProcesses(siteDir).filter((r) => r.what === what && isAlive(r.pid, r.start));
}

/**
 * The node's boot id, as its sessions read /proc/sys/kernel/random/boot_id: the file
 * <root>/etc/boot_id, bind-mounted there in the mount namespace of the node's sshd (every node
 * shares this machine's kernel, and a node's reboot gives it a new one: faults.ts rebootNode).
 */
export function bootIdPath(root: string): string {
  return path.join(root, "etc", "boot_id");
}

/** The node at `root` of the sshd_config `cfg` (<root>/etc/ssh/sshd_config). */
function rootOf(cfg: string): string {
  return path.dirname(path.dirname(path.dirname(cfg)));
}

/**
 * Start `sshd -D` detached (own session) so it outlives the CLI that starts it, in a mount
 * namespace of its own where the node's boot id file is /proc/sys/kernel/random/boot_id (unshare
 * and sh exec in turn: the pid is sshd's).
 */
export function startSshd(cfg: string, log: string): ProcRecord {
  const out = fs.openSync(log, "a");
  const bootId = bootIdPath(rootOf(cfg));
  if (!fs.existsSync(bootId)) fs.writeFileSync(bootId, `${randomUUID()}\n`);
  const mount = 'mount --bind "$0" /proc/sys/kernel/random/boot_id && exec "$@"';
  const sshd = [SSHD, "-D", ...reexecFlags(cfg), "-f", cfg, "-E", log];
  const child = spawn("unshare", ["--mount", "--propagation", "private", "sh", "-c", mount, bootId, ...sshd], {
    detached: true,
    stdio: ["ignore", out, out],
  });
  fs.closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined) throw new Error(`test site: could not start ${SSHD} -f ${cfg}`);
  return { pid, start: procStat(pid)?.start ?? null, what: `sshd -f ${cfg}` };
}

function banner(ip: string, port: number): Promise<string | null> {
  return new Promise((resolve) => {
    const sock = net.connect({ host: ip, port });
    let data = "";
    const done = (v: string | null): void => {
      sock.destroy();
      resolve(v);
    };
    sock.setTimeout(2000, () => {
      done(null);
    });
    sock.on("data", (d) => {
      data += d.toString("utf8");
      if (data.includes("\n")) done(data.split("\n")[0] ?? null);
    });
    sock.on("error", () => {
      done(null);
    });
    sock.on("close", () => {
      done(null);
    });
  });
}

/** Wait until the node's sshd greets with an SSH banner; fail early if it died. */
export async function waitForSshd(
  ip: string,
  port: number,
  rec: ProcRecord,
  log: string,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const st = procStat(rec.pid);
    if (st === null || st.state === "Z") {
      const tail = fs.existsSync(log) ? fs.readFileSync(log, "utf8").split("\n").slice(-10).join("\n") : "";
      throw new Error(`test site: sshd on ${ip}:${port} exited at startup:\n${tail}`);
    }
    const b = await banner(ip, port);
    if (b !== null && b.startsWith("SSH-2.0-")) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`test site: sshd on ${ip}:${port} did not accept connections within ${timeoutMs} ms (log: ${log})`);
}

export function sshConfigFor(
  nodes: { name: string; ip: string; sshPort: number }[],
  user: string,
  home: string,
): string {
  const blocks = nodes.map((n) =>
    [
      `Host ${n.ip} ${n.name}`,
      `  HostName ${n.ip}`,
      `  Port ${n.sshPort}`,
      `  User ${user}`,
      `  IdentityFile ${path.join(home, ".ssh", "id_ed25519")}`,
      "  IdentitiesOnly yes",
      `  UserKnownHostsFile ${path.join(home, ".ssh", "known_hosts")}`,
      "  GlobalKnownHostsFile /dev/null",
      "  StrictHostKeyChecking yes",
      "  BatchMode yes",
      "",
    ].join("\n"),
  );
  return `# ssh config of a simulated node (the ssh shim passes it with -F)\n${blocks.join("\n")}`;
}
