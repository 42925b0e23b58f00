"use strict";
// A model repo of the site's hub, <site>/hf-hub/<org>/<name>/: its files with their etags (sha256
// for LFS files, the git blob sha1 for the others, as the hub gives them) and its commit. Shared by
// the `hf download` stand-in (./download.js) and the hub's HTTP stand-in (./serve.js).
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");

function etag(file, data) {
  if (file.endsWith(".safetensors")) return crypto.createHash("sha256").update(data).digest("hex");
  return crypto.createHash("sha1").update(`blob ${data.length}\0`).update(data).digest("hex");
}

/** The repo's files and commit; undefined when the hub has no such repo. */
function repoAt(hub, repo) {
  if (!/^[\w.-]+\/[\w.-]+$/.test(repo)) return undefined;
  const src = path.join(hub, ...repo.split("/"));
  if (!fs.existsSync(src)) return undefined;
  const files = fs
    .readdirSync(src)
    .sort()
    .map((f) => {
      const data = fs.readFileSync(path.join(src, f));
      return { f, data, tag: etag(f, data) };
    });
  const commit = crypto
    .createHash("sha1")
    .update(files.map((x) => `${x.f} ${x.tag}\n`).join(""))
    .digest("hex");
  const gate = `${src}.gated`;
  return { src, files, commit, token: fs.existsSync(gate) ? fs.readFileSync(gate, "utf8").trim() : undefined };
}

module.exports = { repoAt };
