// The site images, built once per machine and cached by content under
// ~/.cache/sm121/site-images-<key>/ (./images.ts has the catalog and the build context):
//   registry/   a registry storage: `docker build` on a builder dockerd, then `docker push` to a
//               registry (Debian's docker-registry) on port 80 of STORE_IP; every site's registry
//               serves a copy of it (./registry.ts);
//   node-data/  a dockerd data root into which a fresh dockerd pulled every site image from that
//               registry under the images' own names, as a node pulls them: each node's data root
//               starts as a copy of it (./dockerd.ts seedDataRoot), so a node has the images as a
//               Spark has its images long before sm121 runs, without paying the pull at every site.
import * as fs from "node:fs";
import * as path from "node:path";
import { engineDirs, pullImage, startEngine, waitForEngine } from "./dockerd";
import {
  cacheKey,
  cacheRoot,
  inputs,
  registryFlags,
  registryHostsLine,
  SITE_IMAGES,
  splitRef,
  variant,
  writeContext,
  type Input,
  type SiteImage,
} from "./images";
import { isAlive, procStat, terminate } from "./procs";
import { startRegistry } from "./registry";
import { run } from "./run";
import { needsRealParts } from "./lane";
import { listening } from "./net";

/** How many stores (contents of the fake engine) the machine keeps: other checkouts may use older ones. */
const KEPT_STORES = 4;

/** Where the build's registry listens (port 80): a loopback address no site uses. */
const STORE_IP = "127.255.255.254";

export interface ImageStore {
  /** The registry storage every site's registry serves a copy of. */
  registry: string;
  /** The data root every node's dockerd starts from. */
  nodeData: string;
}

/** Holds the machine-wide build lock while `fn` runs (another test process may build the same images). */
async function withLock<T>(file: string, fn: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 15 * 60_000;
  for (;;) {
    try {
      fs.writeFileSync(file, JSON.stringify({ pid: process.pid, start: procStat(process.pid)?.start ?? null }), {
        flag: "wx",
      });
      break;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== "EEXIST") {
        throw new Error(`test site: cannot take the image build lock ${file}: ${(e as Error).message}`, { cause: e });
      }
      let holder: { pid?: number; start?: string | null } = {};
      try {
        holder = JSON.parse(fs.readFileSync(file, "utf8")) as typeof holder;
      } catch {
        // being written: look again
      }
      if (typeof holder.pid === "number" && !isAlive(holder.pid, holder.start)) fs.rmSync(file, { force: true });
      if (Date.now() > deadline) {
        const held = `${file} is held by pid ${String(holder.pid)} for 15 minutes`;
        throw new Error(`test site: ${held}; remove it if that process is gone`, { cause: e });
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return await fn();
  } finally {
    fs.rmSync(file, { force: true });
  }
}

/** A dockerd of the build, in `dir`, with the registries' names at STORE_IP. */
function buildEngine(dir: string, hostname: string, args: string[]) {
  const hosts = path.join(dir, "hosts");
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(hosts, `127.0.0.1 localhost\n${registryHostsLine(STORE_IP)}\n`);
  const s = { dirs: engineDirs(path.join(dir, "d")), hostname, hosts, log: path.join(dir, "dockerd.log") };
  const rec = startEngine({ ...s, env: { PATH: "/usr/sbin:/usr/bin:/sbin:/bin" }, args });
  return { ...s, rec };
}

/** Builds every site image, pushes it to a registry storage, and pulls it into a fresh data root. */
async function build(work: string, all: Input[], key: string): Promise<void> {
  fs.rmSync(work, { recursive: true, force: true });
  const ctx = path.join(work, "ctx");
  writeContext(ctx, all);
  if (await listening(STORE_IP, 80)) throw new Error(`test site: ${STORE_IP}:80, the image build's registry, is taken`);
  const registry = await startRegistry({
    storage: path.join(work, "registry"),
    config: path.join(work, "registry.yml"),
    log: path.join(work, "registry.log"),
    host: STORE_IP,
    port: 80,
  });
  const builder = buildEngine(path.join(work, "builder"), "sm121-image-builder", registryFlags(STORE_IP));
  const seed = buildEngine(path.join(work, "seed"), "sm121-image-seed", registryFlags(STORE_IP));
  try {
    await waitForEngine(builder, builder.rec, 60_000);
    const docker = (args: string[], input?: string) =>
      run("/usr/bin/docker", ["-H", `unix://${builder.dirs.sock}`, ...args], {
        input,
        env: { ...process.env, DOCKER_BUILDKIT: "0" },
      });
    const base = `sm121-site-base:${key}`;
    await docker(["build", "-q", "-t", base, ctx]);
    for (const [ref, image] of Object.entries(SITE_IMAGES) as Array<[string, SiteImage]>) {
      const { repo, tag } = splitRef(ref);
      // The registry holds repositories by path alone: STORE_IP/<path> is what nvcr.io/<path> finds.
      const local = `${STORE_IP}/${repo}:${tag}`;
      await docker(["build", "-q", "-t", local, "-"], variant(base, ref, image));
      await docker(["push", local]);
    }
    await waitForEngine(seed, seed.rec, 60_000);
    for (const ref of Object.keys(SITE_IMAGES)) await pullImage(seed.dirs.sock, ref);
  } finally {
    await terminate([registry.proc, builder.rec, seed.rec], 10_000);
  }
}

/**
 * Stores of other contents (another version of the fake engine) but the newest few: a running site
 * keeps what it uses, its copies and hard links, when its store goes.
 */
function pruneStores(keep: string): void {
  const stores = fs
    .readdirSync(cacheRoot())
    .filter((d) => /^site-images-[0-9a-f]{12}$/.test(d))
    .map((d) => path.join(cacheRoot(), d))
    .filter((d) => d !== keep && fs.existsSync(path.join(d, "complete")))
    .sort((a, b) => fs.statSync(path.join(b, "complete")).mtimeMs - fs.statSync(path.join(a, "complete")).mtimeMs);
  for (const old of stores.slice(KEPT_STORES - 1)) fs.rmSync(old, { recursive: true, force: true });
}

/** The site images' registry storage and node data root, built when the machine has none for this content yet. */
export async function siteImageStore(): Promise<ImageStore> {
  needsRealParts("the site's Docker images");
  const all = inputs();
  const key = cacheKey(all);
  const home = path.join(cacheRoot(), `site-images-${key}`);
  const store = { registry: path.join(home, "registry"), nodeData: path.join(home, "node-data") };
  if (fs.existsSync(path.join(home, "complete"))) return store;
  fs.mkdirSync(cacheRoot(), { recursive: true });
  const repos = new Map<string, string>();
  for (const ref of Object.keys(SITE_IMAGES)) {
    const { host, repo } = splitRef(ref);
    const other = repos.get(repo);
    if (other !== undefined && splitRef(other).host !== host) {
      throw new Error(`test site: ${ref} and ${other} would share the repository ${repo} in the site's one registry`);
    }
    repos.set(repo, ref);
  }
  return withLock(path.join(cacheRoot(), "site-images.lock"), async () => {
    if (fs.existsSync(path.join(home, "complete"))) return store;
    const work = path.join(cacheRoot(), `site-images-${key}.build`);
    await build(work, all, key);
    fs.rmSync(home, { recursive: true, force: true });
    fs.mkdirSync(home, { recursive: true });
    fs.renameSync(path.join(work, "registry"), store.registry);
    fs.renameSync(engineDirs(path.join(work, "seed", "d")).data, store.nodeData);
    fs.writeFileSync(path.join(home, "complete"), `${new Date().toISOString()}\n`);
    fs.rmSync(work, { recursive: true, force: true });
    pruneStores(home);
    return store;
  });
}
