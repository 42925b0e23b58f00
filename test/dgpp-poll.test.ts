/**
 * The DGPP build's poll, run by bash as the node runs it. The real tmux and the real build are in
 * test/e2e/dgpp.test.ts; here a `tmux` first on PATH answers `has-session`, so that the build can
 * end between the poll's two questions (its last line written, then its session gone), an
 * interleaving the real tmux gives only by chance.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { firstRecord, recordOfLine, type NodeRecord } from "../src/protocol";
import type { DgppPaths } from "../src/render/dgpp";
import { buildPollScript } from "../src/serve/dgpp";
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
