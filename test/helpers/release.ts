/**
 * An earlier release of sm121, built from this repository's own history, to write a stack on the
 * simulated site as that release did (test/e2e/state-upgrade.test.ts). The build is cached
 * outside the repository, keyed by commit (~/.cache/sm121/releases/<commit>), so only the first
 * run on a machine pays for it; it uses this checkout's node_modules (the releases pinned the same
 * @pulumi/pulumi, ssh2 and zod).
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { REPO } from "./project";

/** The directory of a built release: its dist/ and recipes/. */
export function releaseBuild(commit: string): string {
  if (!/^[0-9a-f]{7,40}$/.test(commit)) throw new Error(`release ${JSON.stringify(commit)}: a commit id is expected`);
  const base = join(process.env["SM121_CACHE"] ?? join(homedir(), ".cache", "sm121"), "releases");
  const dir = join(base, commit);
  if (existsSync(join(dir, "dist", "src", "index.js"))) return dir;
  const tmp = join(base, `${commit}.tmp-${process.pid}`);
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  const tar = join(base, `${commit}-${process.pid}.tar`);
  execFileSync("git", ["-C", REPO, "archive", "--format=tar", "-o", tar, commit]);
  execFileSync("tar", ["-xf", tar, "-C", tmp]);
  rmSync(tar);
  symlinkSync(join(REPO, "node_modules"), join(tmp, "node_modules"));
  const tsc = join(REPO, "node_modules", "typescript", "bin", "tsc");
  execFileSync(process.execPath, [tsc, "-p", join(tmp, "tsconfig.json")], { stdio: "pipe" });
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/** Points the project's dist/ at a release (or back at this checkout's build). */
export function useBuild(projectDir: string, buildDir: string): void {
  rmSync(join(projectDir, "dist"), { force: true });
  symlinkSync(join(buildDir, "dist"), join(projectDir, "dist"));
}
