// Where the test site's assets are, from the TypeScript sources (vitest) and from
// the compiled CLI (dist/test/site/cli.js), and which Node.js the nodes run.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** The test/site source directory: shims/, dgpp/ and recipe/ live there. */
export function siteSourceDir(): string {
  const candidates = [__dirname, path.resolve(__dirname, "..", "..", "..", "test", "site")];
  for (const dir of candidates) {
    if (fs.existsSync(path.join(dir, "shims", "fake-engine.js"))) return dir;
  }
  throw new Error(`test site: shims not found (looked in ${candidates.join(", ")}); run from the repository checkout`);
}

/** src/engines/options: the engines' option tables (JSON), beside the test/site sources. */
export function engineOptionsDir(): string {
  return path.resolve(siteSourceDir(), "..", "..", "src", "engines", "options");
}

/** src/engines/metrics: the engines' Prometheus metric definitions (JSON), read by the fake engine. */
export function engineMetricsDir(): string {
  return path.resolve(siteSourceDir(), "..", "..", "src", "engines", "metrics");
}

/** The bin directory of a Node.js >= 22 (the nodes' PATH and the shims' `node`). */
export function nodeBinDir(): string {
  const major = Number(process.versions.node.split(".")[0] ?? "0");
  if (major >= 22) return path.dirname(process.execPath);
  const cache = path.join(os.homedir(), ".cache", "sm121");
  const dirs = fs.existsSync(cache)
    ? fs
        .readdirSync(cache)
        .filter((d) => /^node-22\./.test(d))
        .sort()
    : [];
  const last = dirs[dirs.length - 1];
  if (last !== undefined) return path.join(cache, last, "bin");
  throw new Error(
    `test site: Node.js 22 not found (running ${process.version}); put ~/.cache/sm121/node-22.*/bin first on PATH`,
  );
}

/** Absolute paths that sshd_config SetEnv and the shell scripts can carry unquoted. */
export function checkPlainPath(what: string, p: string): void {
  if (!path.isAbsolute(p) || !/^[A-Za-z0-9_./+-]+$/.test(p)) {
    throw new Error(
      `test site: ${what} must be an absolute path of letters, digits and _./+- only, got ${JSON.stringify(p)}`,
    );
  }
}
