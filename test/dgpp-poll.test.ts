/**
 * The DGPP build's start and poll, run by bash as the node runs them. The real tmux and the real
 * build are in test/e2e/dgpp.test.ts; here a `tmux` first on PATH answers `has-session`, so that
 * the build can end between the poll's two questions (its last line written, then its session
 * gone), an interleaving the real tmux gives only by chance, and runs a new session's command at
 * once.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, lstatSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { firstRecord, recordOfLine, type NodeRecord } from "../src/protocol";
import { dgppPaths, type DgppPaths } from "../src/dgpp/files.render";
import { buildPollScript, startBuild } from "../src/dgpp/provision.serve";
import { parseRecipe } from "../src/engines/recipes";
import { testDir } from "./helpers/tmp";

function poll(log: string | undefined, tmux: string): { state?: string; last: string } {
  const dir = testDir("sm121-dgpp-poll-");
  const bin = join(dir, "bin");
  mkdirSync(bin);
  writeFileSync(join(bin, "tmux"), `#!/bin/bash\n${tmux}\n`);
  chmodSync(join(bin, "tmux"), 0o755);
  const buildLog = join(dir, "build.log");
  if (log !== undefined) writeFileSync(buildLog, log);
  const paths: DgppPaths = {
    dir: "~/dgpp",
    config: "~/dgpp/cluster.json",
    env: "~/dgpp/.env",
    marker: "~/dgpp/.sm121-dgpp-rev",
    buildScript: "~/dgpp/.sm121-build.sh",
    buildLog,
    session: "sm121-dgpp-dg",
  };
  const r = spawnSync("bash", ["-c", buildPollScript(paths)], {
    env: { PATH: `${bin}:${process.env["PATH"] ?? ""}`, BUILD_LOG: buildLog },
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(0);
  const records = r.stdout.split("\n").flatMap((l): NodeRecord[] => {
    const rec = recordOfLine(l);
    return rec === undefined ? [] : [rec];
  });
  const rec = firstRecord(records, "dgppBuild");
  return {
    state: rec?.state,
    last: Buffer.from(rec?.last64 ?? "", "base64")
      .toString("utf8")
      .trim(),
  };
}

describe("the DGPP build's poll", () => {
  it("is done when the log has the end marker, running while its session is there, failed otherwise", () => {
    expect(poll("release.sh: building\nSM121-DGPP-DONE\n", "exit 1")).toEqual({
      state: "done",
      last: "SM121-DGPP-DONE",
    });
    expect(poll("release.sh: building CUDA kernels\n", "exit 0")).toEqual({
      state: "running",
      last: "release.sh: building CUDA kernels",
    });
    expect(poll("nvcc fatal: kernel build failed\n", "exit 1")).toEqual({
      state: "failed",
      last: "nvcc fatal: kernel build failed",
    });
    expect(poll(undefined, "exit 1")).toEqual({ state: "failed", last: "" });
  });

  it("is done when the build ends between its two questions: the marker written, then the session gone", () => {
    const ends = 'echo SM121-DGPP-DONE >> "$BUILD_LOG"; exit 1';
    expect(poll("release.sh: building\n", ends)).toEqual({ state: "done", last: "SM121-DGPP-DONE" });
  });
});

describe("the DGPP build's log", () => {
  const recipe = parseRecipe(
    "recipes/dg.toml",
    'engine = "dgpp"\ndeploy = "native"\nmodel = "org/m"\n[dgpp]\nrepo = "r"\nrev = "v1"\n',
  );

  it("is in the deployment's own directory on rank 0, not in the node's shared /tmp", () => {
    expect(dgppPaths(recipe, "~/.sm121/deployments/dg").buildLog).toBe("~/.sm121/deployments/dg/dgpp-build.log");
  });

  it("is made in a 0700 directory, and a symlink found at its name is replaced, never written through", () => {
    const dir = testDir("sm121-dgpp-log-");
    const bin = join(dir, "bin");
    mkdirSync(bin);
    // A new session's command runs at once, as the session would run it.
    writeFileSync(join(bin, "tmux"), '#!/bin/bash\n[ "$1" = new-session ] && bash -c "$5"\nexit 0\n');
    chmodSync(join(bin, "tmux"), 0o755);
    const own = join(dir, "home", ".sm121", "deployments", "dg");
    mkdirSync(own, { recursive: true, mode: 0o755 });
    const victim = join(dir, "victim");
    writeFileSync(victim, "precious\n");
    const paths = { ...dgppPaths(recipe, own), dir: join(dir, "dgpp"), buildScript: join(dir, "dgpp", "b.sh") };
    symlinkSync(victim, paths.buildLog);
    const r = spawnSync("bash", ["-c", startBuild(paths, "echo building\necho SM121-DGPP-DONE\n")], {
      env: { PATH: `${bin}:${process.env["PATH"] ?? ""}`, HOME: join(dir, "home") },
      encoding: "utf8",
    });
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(victim, "utf8")).toBe("precious\n");
    expect(lstatSync(paths.buildLog).isSymbolicLink()).toBe(false);
    expect(readFileSync(paths.buildLog, "utf8")).toBe("building\nSM121-DGPP-DONE\n");
    expect(statSync(own).mode & 0o777).toBe(0o700);
  });
});
