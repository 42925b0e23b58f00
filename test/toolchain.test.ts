/**
 * scripts/toolchain.sh under the PATHs an operator has: the machine's Pulumi CLI used when it is a
 * new enough v3 release, a build otherwise (a `go` shim stands in for the 5-minute build: it
 * records what it was asked to build and writes a stub), and the script run again with its own
 * output directory first on PATH, which must change nothing and never link a tool to itself.
 */
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  chmodSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const REPO = join(__dirname, "..");
const base = mkdtempSync(join(tmpdir(), "sm121-toolchain-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));

const NODE_DIR = dirname(realpathSync(process.execPath));
const SYSTEM = "/usr/local/bin:/usr/bin:/bin";

function exe(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, 0o755);
}

/** A directory with a `pulumi` printing `version`, and the plugins a Pulumi release ships beside it. */
function machinePulumi(name: string, version: string): string {
  const dir = join(base, name);
  exe(join(dir, "pulumi"), `#!/bin/sh\n[ "$1" = version ] && echo ${version}\n`);
  exe(join(dir, "pulumi-language-nodejs"), "#!/bin/sh\n");
  exe(join(dir, "pulumi-resource-pulumi-nodejs"), "#!/bin/sh\n");
  return dir;
}

/** A `go` that records each build and writes a stub binary where -o says (a built CLI prints its version). */
function goShim(log: string): string {
  const dir = join(base, "go-shim");
  exe(
    join(dir, "go"),
    `#!/bin/bash
out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out=$2; last=$1; shift; done
echo "build $last" >> ${log}
printf '#!/bin/sh\\n[ "$1" = version ] && echo v3.274.1\\n' > "$out"; chmod +x "$out"
`,
  );
  return dir;
}

/** A copy of the scripts and the toolchain module, so that a test can change the language host's source. */
function checkout(): string {
  const dir = mkdtempSync(join(base, "repo-"));
  cpSync(join(REPO, "scripts", "toolchain.sh"), join(dir, "scripts", "toolchain.sh"));
  cpSync(join(REPO, "toolchain"), join(dir, "toolchain"), { recursive: true });
  return dir;
}

interface Run {
  code: number | null;
  bin: string;
  stderr: string;
}

function toolchain(repo: string, cache: string, path: string, env: Record<string, string> = {}): Run {
  // The rest of the environment stays: npm reaches its registry through it (a proxy, a mirror).
  const inherited = { ...process.env };
  delete inherited["SM121_BUILD_PULUMI"];
  const r = spawnSync("bash", [join(repo, "scripts", "toolchain.sh")], {
    env: { ...inherited, SM121_CACHE: cache, PATH: path, ...env },
    encoding: "utf8",
    timeout: 240_000,
  });
  return { code: r.status, bin: r.stdout.trim().split("\n").pop() ?? "", stderr: r.stderr };
}

const links = (bin: string) =>
  Object.fromEntries(
    ["node", "pulumi", "pulumi-language-nodejs", "pulumi-resource-pulumi-nodejs"].map((f) => [
      f,
      readlinkSync(join(bin, f)),
    ]),
  );

describe("scripts/toolchain.sh", () => {
  it(
    "uses the machine's Pulumi CLI when it is a v3 release >= v3.153.0, " +
      "and is idempotent with its own directory on PATH",
    () => {
      const repo = checkout();
      const cache = join(base, "cache-machine");
      const machine = machinePulumi("machine", "v3.200.0");
      // The state the old script left behind: a `node` linked to itself, first on PATH.
      const loop = join(base, "loop");
      mkdirSync(loop);
      symlinkSync(join(loop, "node"), join(loop, "node"));
      const path = [loop, machine, NODE_DIR, SYSTEM].join(":");
      const first = toolchain(repo, cache, path);
      expect(first.code, first.stderr).toBe(0);
      expect(links(first.bin)).toEqual({
        node: realpathSync(process.execPath),
        pulumi: join(machine, "pulumi"),
        "pulumi-language-nodejs": join(machine, "pulumi-language-nodejs"),
        "pulumi-resource-pulumi-nodejs": join(machine, "pulumi-resource-pulumi-nodejs"),
      });
      expect(first.stderr).toContain(`pulumi v3.200.0 at ${join(machine, "pulumi")} (the machine's)`);

      // As the README says: export PATH="$(bash scripts/toolchain.sh | tail -n 1):$PATH", then again.
      for (let i = 0; i < 2; i++) {
        const again = toolchain(repo, cache, `${first.bin}:${path}`);
        expect(again.code, again.stderr).toBe(0);
        expect(again.bin).toBe(first.bin);
        expect(links(again.bin)).toEqual(links(first.bin));
      }
      const node = spawnSync(join(first.bin, "node"), ["--version"], { encoding: "utf8" });
      expect(node.stdout.trim()).toBe(process.version);
    },
    120_000,
  );

  it(
    "builds when the machine's CLI is too old, or with SM121_BUILD_PULUMI=1; " +
      "a language host change rebuilds the host alone",
    () => {
      const repo = checkout();
      const cache = join(base, "cache-build");
      const log = join(base, "go.log");
      writeFileSync(log, "");
      const builds = () =>
        readFileSync(log, "utf8")
          .trim()
          .split("\n")
          .filter((l) => l !== "");
      const old = machinePulumi("old", "v3.100.0");
      const path = [old, goShim(log), NODE_DIR, SYSTEM].join(":");

      const first = toolchain(repo, cache, path);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stderr).toContain(
        `skipping ${join(old, "pulumi")} (v3.100.0): sm121 needs a Pulumi v3 release >= v3.153.0`,
      );
      expect(builds()).toEqual([
        "build github.com/pulumi/pulumi/pkg/v3/cmd/pulumi",
        "build ./cmd/pulumi-language-nodejs",
      ]);
      const built = links(first.bin);
      expect(built["pulumi"]?.startsWith(`${realpathSync(cache)}/`)).toBe(true);
      expect(built["pulumi-language-nodejs"]?.startsWith(`${realpathSync(cache)}/`)).toBe(true);
      // The dynamic provider plugin is sm121's launcher of the SDK's host.
      expect(readFileSync(built["pulumi-resource-pulumi-nodejs"] ?? "", "utf8")).toBe(
        readFileSync(join(REPO, "toolchain", "pulumi-resource-pulumi-nodejs"), "utf8"),
      );

      // Cached: a second run, its own directory on PATH, builds nothing.
      const again = toolchain(repo, cache, `${first.bin}:${path}`);
      expect(again.bin).toBe(first.bin);
      expect(builds()).toHaveLength(2);

      // A change to the language host's source rebuilds the host, not the CLI.
      appendFileSync(join(repo, "toolchain", "pulumi", "cmd", "pulumi-language-nodejs", "main.go"), "\n// changed\n");
      const changed = toolchain(repo, cache, path);
      expect(changed.code, changed.stderr).toBe(0);
      expect(builds().slice(2)).toEqual(["build ./cmd/pulumi-language-nodejs"]);
      // The same CLI file (hard-linked beside the new host, where the CLI looks for its plugins).
      const cli = (bin: string) => statSync(join(bin, "pulumi")).ino;
      expect(cli(changed.bin)).toBe(cli(first.bin));
      expect(dirname(links(changed.bin)["pulumi"] ?? "")).toBe(
        dirname(links(changed.bin)["pulumi-language-nodejs"] ?? ""),
      );

      // A new enough machine CLI is passed over when the build is asked for.
      const machine = machinePulumi("machine-2", "v3.274.1");
      const forced = toolchain(repo, cache, [machine, path].join(":"), { SM121_BUILD_PULUMI: "1" });
      expect(forced.code, forced.stderr).toBe(0);
      expect(cli(forced.bin)).toBe(cli(first.bin));
      expect(builds()).toHaveLength(3);
    },
    300_000,
  );
});

describe("the dynamic provider launcher", () => {
  const launcher = join(REPO, "toolchain", "pulumi-resource-pulumi-nodejs");
  const run = (cwd: string) =>
    spawnSync(launcher, ["--version-probe"], {
      cwd,
      encoding: "utf8",
      env: { ...process.env, PATH: `${NODE_DIR}:${SYSTEM}` },
    });

  it("runs the SDK's host of the project it is started in, from a subdirectory too", () => {
    const project = mkdtempSync(join(base, "project-"));
    const host = join(project, "node_modules", "@pulumi", "pulumi", "cmd", "dynamic-provider", "index.js");
    mkdirSync(dirname(host), { recursive: true });
    writeFileSync(
      host,
      "process.stdout.write(JSON.stringify({ argv: process.argv.slice(2), cache: " +
        "process.env.NODE_COMPILE_CACHE !== undefined }));\n",
    );
    mkdirSync(join(project, "dist"));
    for (const cwd of [project, join(project, "dist")]) {
      const r = run(cwd);
      expect(r.stderr).toBe("");
      expect(JSON.parse(r.stdout)).toEqual({ argv: ["--version-probe"], cache: true });
    }
  });

  it("says what to install when the project has no @pulumi/pulumi", () => {
    const r = run(mkdtempSync(join(base, "empty-")));
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("@pulumi/pulumi is not installed in");
    expect(r.stderr).toContain("npm ci");
  });
});
