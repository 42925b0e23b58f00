// A real PostgreSQL (Debian's package) for the team tests: a cluster of its own in a temporary
// directory, created with initdb and started with pg_ctl as an unprivileged user (the package's
// `postgres` user when the tests run as root: initdb refuses root), listening on one loopback
// address and port, its socket in the same directory. No system service is touched; stop() ends
// the postmaster by the pid it wrote, and a cluster left by a crashed run is stopped the same way
// before a new one starts in its directory.
import { spawnSync, type SpawnSyncOptions } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { isAlive, procStat } from "./procs";
import { needsRealParts } from "./lane";

export interface Postgres {
  /** The `pulumi login` URL (no password in it: that comes from PGPASSWORD). */
  url: string;
  /** The role's password, for PGPASSWORD in the environment of whoever logs in. */
  password: string;
  /** The postmaster's pid (what stop() signals). */
  pid: number;
  dir: string;
  /** Runs SQL as the cluster's superuser over the unix socket; the rows, tab-separated. */
  sql(query: string): string;
  stop(): Promise<void>;
}

export interface StartPostgresOptions {
  /** The cluster's directory (created; a cluster a crashed run left there is stopped first). */
  dir: string;
  port: number;
  /** The loopback address it listens on (default 127.0.0.1). */
  host?: string;
  /** The role and database the backend uses (default pulumi / pulumi_state). */
  role?: string;
  database?: string;
}

/** The directory of initdb, pg_ctl, postgres and psql: PATH first, then Debian's versioned directory. */
export function pgBinDir(): string {
  for (const dir of (process.env["PATH"] ?? "").split(":")) {
    const f = path.join(dir, "pg_ctl");
    // Debian's /usr/bin wrappers (pg_wrapper) need a system cluster; follow a link to the real bin dir.
    if (dir === "" || !fs.existsSync(f) || !fs.existsSync(path.join(dir, "initdb"))) continue;
    return path.dirname(fs.realpathSync(f));
  }
  const base = "/usr/lib/postgresql";
  const versions = fs.existsSync(base) ? fs.readdirSync(base).filter((v) => /^\d+$/.test(v)) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (fs.existsSync(path.join(base, v, "bin", "initdb"))) return path.join(base, v, "bin");
  throw new Error(
    "PostgreSQL not found: no initdb/pg_ctl on PATH or under /usr/lib/postgresql/*/bin; " +
      "install Debian's postgresql package (scripts/setup.sh does)",
  );
}

/** Who runs the cluster: the `postgres` user when we are root, else ourselves. */
function clusterUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const line = fs
    .readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((l) => l.startsWith("postgres:"));
  const f = line?.split(":");
  if (f === undefined || f.length < 4) {
    throw new Error(
      "the tests run as root and there is no `postgres` user (/etc/passwd); " +
        "install Debian's postgresql package, which creates it",
    );
  }
  return { uid: Number(f[2]), gid: Number(f[3]) };
}

function run(bin: string, args: string[], opts: SpawnSyncOptions, input?: string): string {
  const r = spawnSync(bin, args, { ...opts, encoding: "utf8", input: input ?? "", timeout: 60_000 });
  if (r.status !== 0) {
    const how = `exit ${String(r.status)}${r.signal === null ? "" : `, ${r.signal}`}`;
    throw new Error(`${path.basename(bin)} ${args.join(" ")} failed (${how}):\n${String(r.stdout)}${String(r.stderr)}`);
  }
  return String(r.stdout);
}

/** The postmaster's pid from <data>/postmaster.pid, when that process still runs on this data dir. */
function livePostmaster(data: string): number | undefined {
  let text: string;
  try {
    text = fs.readFileSync(path.join(data, "postmaster.pid"), "utf8");
  } catch {
    return undefined;
  }
  const pid = Number(text.split("\n")[0]);
  if (!Number.isInteger(pid) || pid <= 1 || !isAlive(pid)) return undefined;
  // A reused pid is another process: the postmaster's command line names its data dir.
  const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
  return argv.includes(data) ? pid : undefined;
}

/**
 * The cluster's user must pass through every directory above its own: the ones this process owns
 * (the test's temporary directories) get search permission for others, nothing more.
 */
function searchable(dir: string): void {
  const uid = process.getuid?.();
  for (let d = dir; d !== path.dirname(d); d = path.dirname(d)) {
    const st = fs.statSync(d);
    if ((st.mode & 0o001) === 0 && st.uid === uid) fs.chmodSync(d, (st.mode & 0o7777) | 0o001);
  }
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Fast shutdown by pid (SIGINT), then immediate (SIGQUIT), then SIGKILL, each given time to end. */
async function stopPid(pid: number): Promise<void> {
  const start = procStat(pid)?.start ?? null;
  for (const [sig, ms] of [
    ["SIGINT", 15_000],
    ["SIGQUIT", 5_000],
    ["SIGKILL", 5_000],
  ] as const) {
    if (!isAlive(pid, start)) return;
    process.kill(pid, sig);
    const deadline = Date.now() + ms;
    while (Date.now() < deadline && isAlive(pid, start)) await pause(50);
  }
  if (isAlive(pid, start)) throw new Error(`the PostgreSQL postmaster (pid ${pid}) did not end after SIGKILL`);
}

/** Stops the cluster a run left in `dir` (by the pid in its postmaster.pid). Idempotent. */
export async function stopStalePostgres(dir: string): Promise<void> {
  const pid = livePostmaster(path.join(path.resolve(dir), "data"));
  if (pid !== undefined) await stopPid(pid);
}

export async function startPostgres(o: StartPostgresOptions): Promise<Postgres> {
  needsRealParts("PostgreSQL");
  const dir = path.resolve(o.dir);
  const host = o.host ?? "127.0.0.1";
  const role = o.role ?? "pulumi";
  const database = o.database ?? "pulumi_state";
  for (const [what, v] of [
    ["role", role],
    ["database", database],
  ] as const) {
    if (/^[a-z_][a-z0-9_]{0,62}$/.test(v)) continue;
    throw new Error(`postgres harness: ${what} ${JSON.stringify(v)} must match [a-z_][a-z0-9_]*`);
  }
  await stopStalePostgres(dir);
  fs.rmSync(dir, { recursive: true, force: true });
  const data = path.join(dir, "data");
  const sock = path.join(dir, "run");
  fs.mkdirSync(sock, { recursive: true, mode: 0o700 });
  const user = clusterUser();
  if (user !== undefined) {
    for (const d of [dir, sock]) fs.chownSync(d, user.uid, user.gid);
    searchable(path.dirname(dir));
  }
  const bin = pgBinDir();
  const env = { PATH: `${bin}:/usr/bin:/bin`, HOME: dir, LC_ALL: "C", TZ: "UTC" };
  const as: SpawnSyncOptions = { cwd: dir, env, ...(user !== undefined && { uid: user.uid, gid: user.gid }) };
  // Password logins over TCP (as a shared backend has), trust only on the cluster's own socket.
  const initdb = ["-D", data, "-U", "postgres", "--auth-local=trust", "--auth-host=scram-sha-256"];
  run(path.join(bin, "initdb"), [...initdb, "--encoding=UTF8", "--locale=C", "--no-instructions"], as);
  const settings = `-c listen_addresses=${host} -c port=${o.port} -c unix_socket_directories=${sock}`;
  const log = path.join(dir, "postgres.log");
  run(path.join(bin, "pg_ctl"), ["start", "-D", data, "-l", log, "-w", "-t", "60", "-o", settings], as);
  const pid = livePostmaster(data);
  if (pid === undefined) throw new Error(`postgres harness: pg_ctl left no running postmaster in ${data}; see ${log}`);
  const psql = (db: string) => (query: string) => {
    const conn = ["-h", sock, "-p", String(o.port), "-U", "postgres", "-d", db, "-v", "ON_ERROR_STOP=1"];
    return run(path.join(bin, "psql"), ["-X", "-q", "-A", "-t", "-F", "\t", ...conn, "-f", "-"], as, query);
  };
  const password = randomBytes(18).toString("base64url");
  try {
    psql("postgres")(`CREATE ROLE ${role} LOGIN PASSWORD '${password}';\nCREATE DATABASE ${database} OWNER ${role};\n`);
  } catch (e) {
    await stopPid(pid);
    throw e;
  }
  return {
    url: `postgres://${role}@${host}:${o.port}/${database}?sslmode=disable`,
    password,
    pid,
    dir,
    sql: psql(database),
    stop: () => stopPid(pid),
  };
}
