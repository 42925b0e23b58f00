"use strict";
// `hf download` / `huggingface-cli download` against the site's hub, <site>/hf-hub/<org>/<name>/
// (a copy of test/site/hf-hub). It fills the HF cache layout as huggingface_hub does:
// blobs/<etag> (sha256 for LFS files, the git blob sha1 for the others; written as
// <etag>.incomplete, then renamed), snapshots/<commit>/<file> -> ../../blobs/<etag>,
// refs/<branch>. A blob already there at its size is not fetched again. A repo with
// <org>/<name>.gated needs HF_TOKEN (from the environment, as sm121 passes it) equal to
// that file's content. Every call is appended to <site>/hf-downloads.log (never the token).
const fs = require("node:fs");
const path = require("node:path");
const { repoAt } = require("./repo");

class HfError extends Error {
  constructor(message, code) {
    super(message);
    this.code = code;
  }
}

function parseArgs(prog, argv) {
  const o = { files: [] };
  const takes = {
    "--revision": "revision",
    "--cache-dir": "cacheDir",
    "--repo-type": "repoType",
    "--token": "token",
    "--max-workers": "maxWorkers",
    "--local-dir": "localDir",
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const eq = a.indexOf("=");
    const flag = a.startsWith("--") && eq > 0 ? a.slice(0, eq) : a;
    if (flag in takes) {
      const v = eq > 0 && a.startsWith("--") ? a.slice(eq + 1) : argv[++i];
      if (v === undefined)
        throw new HfError(
          prog === "hf"
            ? `Option '${flag}' requires an argument.`
            : `${prog} download: error: argument ${flag}: expected one argument`,
          2,
        );
      o[takes[flag]] = v;
    } else if (a === "--quiet" || a === "-q") o.quiet = true;
    else if (a.startsWith("-"))
      throw new HfError(prog === "hf" ? `No such option: ${a}` : `${prog}: error: unrecognized arguments: ${a}`, 2);
    else if (o.repo === undefined) o.repo = a;
    else o.files.push(a);
  }
  if (o.repo === undefined)
    throw new HfError(
      prog === "hf"
        ? "Missing argument 'REPO_ID'."
        : `${prog} download: error: the following arguments are required: repo_id`,
      2,
    );
  if (o.localDir !== undefined || o.files.length > 0 || (o.repoType !== undefined && o.repoType !== "model")) {
    throw new HfError(`the test site's ${prog} downloads whole model repos into the cache only`, 2);
  }
  return o;
}

function cacheRoot(o) {
  if (o.cacheDir !== undefined) return o.cacheDir;
  if (process.env.HF_HUB_CACHE) return process.env.HF_HUB_CACHE;
  const home = process.env.HF_HOME || path.join(process.env.HOME || "/nonexistent", ".cache", "huggingface");
  return path.join(home, "hub");
}

function download(prog, argv) {
  const o = parseArgs(prog, argv);
  const site = process.env.SIM_SITE_DIR || "/nonexistent";
  const log = (entry) => {
    const token = process.env.HF_TOKEN ? "set" : "unset";
    const line = { at: new Date().toISOString(), node: process.env.SIM_NODE_NAME, prog, argv, token, ...entry };
    fs.appendFileSync(path.join(site, "hf-downloads.log"), `${JSON.stringify(line)}\n`);
  };
  const found = repoAt(path.join(site, "hf-hub"), o.repo);
  if (found === undefined) {
    log({ repo: o.repo, error: "not found" });
    throw new HfError(
      `Repository Not Found for url: https://huggingface.co/api/models/${o.repo}/revision/${o.revision || "main"}.\n` +
        "Please make sure you specified the correct `repo_id` and `repo_type`.\n" +
        "If you are trying to access a private or gated repo, make sure you are authenticated.",
      1,
    );
  }
  if (found.token !== undefined && process.env.HF_TOKEN !== found.token) {
    log({ repo: o.repo, error: "gated" });
    throw new HfError(
      `Cannot access gated repo for url https://huggingface.co/${o.repo}/resolve/main/config.json.\n` +
        `Access to model ${o.repo} is restricted. You must have access to it and be authenticated to access it. ` +
        "Please log in.",
      1,
    );
  }
  const { files, commit } = found;
  const revision = o.revision || "main";
  if (revision !== "main" && revision !== commit) {
    log({ repo: o.repo, revision, error: "revision not found" });
    throw new HfError(
      `Revision Not Found for url: ` +
        `https://huggingface.co/api/models/${o.repo}/revision/${revision}.\nInvalid rev id: ${revision}`,
      1,
    );
  }
  const repoDir = path.join(cacheRoot(o), `models--${o.repo.replace("/", "--")}`);
  for (const d of ["blobs", "refs", path.join("snapshots", commit)])
    fs.mkdirSync(path.join(repoDir, d), { recursive: true });
  let fetched = 0;
  for (const { f, data, tag } of files) {
    const blob = path.join(repoDir, "blobs", tag);
    if (!(fs.existsSync(blob) && fs.statSync(blob).size === data.length)) {
      fs.writeFileSync(`${blob}.incomplete`, data);
      fs.renameSync(`${blob}.incomplete`, blob);
      fetched += data.length;
    }
    const link = path.join(repoDir, "snapshots", commit, f);
    fs.rmSync(link, { force: true });
    fs.symlinkSync(path.join("..", "..", "blobs", tag), link);
  }
  if (revision === "main") fs.writeFileSync(path.join(repoDir, "refs", "main"), commit);
  log({ repo: o.repo, revision, commit, files: files.length, bytes: fetched });
  process.stdout.write(`${path.join(repoDir, "snapshots", commit)}\n`);
  return 0;
}

function main(prog) {
  const [cmd, ...rest] = process.argv.slice(2);
  try {
    if (cmd !== "download")
      throw new HfError(
        prog === "hf" ? `No such command '${cmd}'.` : `${prog}: error: argument {download}: invalid choice: '${cmd}'`,
        2,
      );
    process.exitCode = download(prog, rest);
  } catch (e) {
    if (!(e instanceof HfError)) throw e;
    process.stderr.write(
      `${
        e.code === 2 ? "Usage: " + prog + " download [OPTIONS] REPO_ID\n" : ""
      }${e.code === 2 ? "Error: " : ""}${e.message}\n`,
    );
    process.exitCode = e.code;
  }
}

module.exports = { main };
