/**
 * The one allocator of the test site's addresses and ports. vitest runs test files side by side
 * (forks), so two files must never bind the same address and port; and a failure must be
 * reproducible, so a file gets the same ones at every run.
 *
 * A file is identified by its path in the repository (vitest's `__filename`). Its slot is its
 * place in the sorted list of every test file (test/**\/*.test.ts): distinct files, distinct
 * slots, with nothing to hand out or lock. Slot s owns
 * - the loopback /24 `<run>.<s + 1>` (`<run>` is `$SM121_TEST_NET`, 127.R, default 127.0): the
 *   addresses of its sites' nodes (their sshd, registry on port 80, engines on their own ports)
 *   and of any other server it starts;
 * - the ports PORT_BASE + s * PORTS_PER_FILE onwards, PORTS_PER_FILE of them, for what binds the
 *   address every file shares, 127.0.0.1 (an engine with BIND=127.0.0.1, PostgreSQL, Prometheus,
 *   LiteLLM). They lie below the kernel's ephemeral range (32768 and up), so an outgoing
 *   connection never holds one.
 * `<run>.0` is no file's: it holds what is fixed by design (recordedSite) and the sites of the
 * bench, the demo and the site CLI, which do not run under vitest.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** Where a site's nodes are: `<net>.<firstIp + i>`, every sshd on `sshPort`. */
export interface SiteAt {
  net: string;
  firstIp: number;
  sshPort: number;
}

/** The addresses and ports of one test file. */
export interface FileAddresses {
  /** The file, relative to the repository. */
  file: string;
  slot: number;
  /** The file's loopback /24, as its first three octets. */
  net: string;
  /** The file's k-th site (nodes from `<net>.<11 + 20 k>`, at most SITE_NODES of them). */
  site(k?: number): SiteAt;
  /** The file's i-th address for a server that is no site node: `<net>.<2 + i>`. */
  host(i: number): string;
  /** The file's i-th port on 127.0.0.1. */
  port(i: number): number;
}

export const PORT_BASE = 20_000;
export const PORTS_PER_FILE = 20;
/** The most test files the allocator has room for: one /24 each, third octets 1-254. */
export const MAX_FILES = 254;
export const SITES_PER_FILE = 10;
export const SITE_NODES = 20;
const HOSTS = 9;
/** Every site's sshd port: each node has an address of its own, so one port does. */
export const SSH_PORT = 2222;

/** The first two octets every test address starts with: `$SM121_TEST_NET`, default 127.0. */
export function runNet(): string {
  const run = process.env["SM121_TEST_NET"] ?? "127.0";
  if (!/^127\.\d{1,3}$/.test(run) || Number(run.split(".")[1]) > 255)
    throw new Error(`SM121_TEST_NET=${run} must be 127.R (a loopback /16 for one run, R from 0 to 255)`);
  return run;
}

/** The repository that holds `file`: the nearest directory above it with a Pulumi.yaml. */
function repoOf(file: string): string {
  let dir = path.dirname(path.resolve(file));
  while (!fs.existsSync(path.join(dir, "Pulumi.yaml"))) {
    if (path.dirname(dir) === dir) throw new Error(`test addresses: ${file} is in no sm121 checkout`);
    dir = path.dirname(dir);
  }
  return dir;
}

/** Every test file of the checkout at `repo`, relative to it, sorted: the slots' registry. */
export function testFiles(repo: string): string[] {
  const walk = (dir: string): string[] =>
    fs.readdirSync(path.join(repo, dir), { withFileTypes: true }).flatMap((d) => {
      const p = `${dir}/${d.name}`;
      if (d.isDirectory()) return d.name === "golden" || d.name === "fixtures" ? [] : walk(p);
      return d.name.endsWith(".test.ts") ? [p] : [];
    });
  return walk("test").sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}

function inRange(what: string, i: number, n: number): void {
  if (!Number.isInteger(i) || i < 0 || i >= n) throw new Error(`test addresses: ${what} ${i} is not in 0-${n - 1}`);
}

/** The addresses and ports of the test file `file` (pass `__filename`). */
export function allocate(file: string): FileAddresses {
  const repo = repoOf(file);
  const rel = path.relative(repo, path.resolve(file)).split(path.sep).join("/");
  const files = testFiles(repo);
  const slot = files.indexOf(rel);
  if (slot < 0) throw new Error(`test addresses: ${rel} is no test file (test/**/*.test.ts); pass __filename`);
  if (files.length > MAX_FILES)
    throw new Error(`test addresses: ${files.length} test files, room for ${MAX_FILES}; see test/site/alloc.ts`);
  const net = `${runNet()}.${slot + 1}`;
  return {
    file: rel,
    slot,
    net,
    site(k = 0) {
      inRange("site", k, SITES_PER_FILE);
      return { net, firstIp: 11 + SITE_NODES * k, sshPort: SSH_PORT };
    },
    host(i) {
      inRange("host", i, HOSTS);
      return `${net}.${2 + i}`;
    },
    port(i) {
      inRange("port", i, PORTS_PER_FILE);
      return PORT_BASE + slot * PORTS_PER_FILE + i;
    },
  };
}

/**
 * Fixed by design: the state fixtures of earlier releases (test/fixtures/state/) were recorded
 * from stacks on these addresses and ports, and an upgrade must find its nodes where the state
 * says they are. In `<run>.0`, which no test file is given.
 */
export function recordedSite(firstIp: number, sshPort: number): SiteAt {
  return { net: `${runNet()}.0`, firstIp, sshPort };
}
