// The fake DGPP as a git repository: the work tree from test/site/dgpp/ is
// committed twice (the second commit bumps VERSION) with fixed identities and
// dates, so the commit hashes are the same on every run, then cloned bare to
// <dir>/dgpp.git for the nodes to clone and fetch.
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { siteSourceDir } from "./paths";

const GIT_ENV: Record<string, string> = {
  GIT_CONFIG_NOSYSTEM: "1",
  GIT_CONFIG_GLOBAL: "/dev/null",
  GIT_AUTHOR_NAME: "DGPP Test Site",
  GIT_AUTHOR_EMAIL: "dgpp@test-site.invalid",
  GIT_COMMITTER_NAME: "DGPP Test Site",
  GIT_COMMITTER_EMAIL: "dgpp@test-site.invalid",
};

function git(cwd: string, args: string[], date?: string): string {
  const env: Record<string, string> = { PATH: process.env.PATH ?? "/usr/bin:/bin", HOME: cwd, ...GIT_ENV };
  if (date !== undefined) {
    env.GIT_AUTHOR_DATE = date;
    env.GIT_COMMITTER_DATE = date;
  }
  const r = spawnSync("git", ["-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false", ...args], {
    cwd,
    env,
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`test site: git ${args.join(" ")} in ${cwd} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/** Creates <dir>/dgpp-src (work tree) and <dir>/dgpp.git; returns the revisions, oldest first. */
export function createDgppRepo(dir: string): { repo: string; revs: string[] } {
  const src = path.join(dir, "dgpp-src");
  const repo = path.join(dir, "dgpp.git");
  fs.rmSync(src, { recursive: true, force: true });
  fs.rmSync(repo, { recursive: true, force: true });
  fs.cpSync(path.join(siteSourceDir(), "dgpp"), src, { recursive: true });
  for (const f of ["scripts/release.sh", "scripts/dgpp-cluster", "scripts/download_model.py", "bin/dgpp-manager"]) {
    fs.chmodSync(path.join(src, f), 0o755);
  }
  fs.writeFileSync(path.join(src, ".gitignore"), "dist/\nreleases/\nlog/\nrun/\n");
  git(src, ["init", "-q"]);
  git(src, ["add", "-A"]);
  git(src, ["commit", "-q", "-m", "DGPP 0.1.0"], "2026-09-01T10:00:00Z");
  fs.writeFileSync(path.join(src, "VERSION"), "0.1.1\n");
  git(src, ["commit", "-q", "-am", "DGPP 0.1.1: bump version"], "2026-09-15T10:00:00Z");
  git(dir, ["clone", "-q", "--bare", src, repo]);
  const revs = git(repo, ["rev-list", "--reverse", "main"])
    .split("\n")
    .filter((l) => l.length > 0);
  return { repo, revs };
}
