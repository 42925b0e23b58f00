/**
 * An earlier release of sm121, built from this repository's own history, to write a stack on the
 * simulated site as that release did (test/e2e/state-upgrade.test.ts). The build is cached
 * outside the repository, keyed by commit (~/.cache/sm121/releases/<commit>), so only the first
 * run on a machine pays for it. It is compiled against this checkout's node_modules and runs with
 * them (the releases pinned the same @pulumi/pulumi, ssh2 and zod); the cache keeps no link to
 * them, so any checkout can use it.
 */
import { execFileSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, symlinkSync } from "node:fs";
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
  rmSync(join(tmp, "node_modules"));
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return dir;
}

/**
 * The project runs a release: its build copied in as the project's dist/, so that it loads the
 * project's node_modules, as a clone of that release would.
 */
export function useRelease(projectDir: string, commit: string): void {
  rmSync(join(projectDir, "dist"), { recursive: true, force: true });
  cpSync(join(releaseBuild(commit), "dist"), join(projectDir, "dist"), { recursive: true });
}

/** The project runs this checkout's build again (dist/ linked, as test/helpers/project sets it up). */
export function useCheckout(projectDir: string): void {
  rmSync(join(projectDir, "dist"), { recursive: true, force: true });
  symlinkSync(join(REPO, "dist"), join(projectDir, "dist"));
}
