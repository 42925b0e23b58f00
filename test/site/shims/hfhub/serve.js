"use strict";
// The hub's HTTP stand-in, for what a node asks of https://huggingface.co with curl (sm121's
// memory fit reads config.json and the safetensors index through a node before the first up):
// GET and HEAD of /<org>/<name>/resolve/<revision>/<file> from <site>/hf-hub (./repo.js), as the
// hub answers them: the file; 404 for a repo, revision (main or the repo's commit) or file it does
// not have; 401 for a gated repo without `Authorization: Bearer <its token>`. A file in LFS
// (*.safetensors) carries X-Linked-Size and X-Linked-Etag, as the hub's resolve answer does.
// Nodes reach it through HF_ENDPOINT (their sshd SetEnv), as huggingface_hub and curl scripts do.
// Usage: node serve.js <hub dir> <host> <port>
const http = require("node:http");
const { repoAt } = require("./repo");

const [hub, host, port] = process.argv.slice(2);

const server = http.createServer((req, res) => {
  const m = /^\/([\w.-]+\/[\w.-]+)\/resolve\/([^/]+)\/([^?]+)(\?.*)?$/.exec(req.url || "");
  const end = (code, headers = {}, body = "") => {
    res.writeHead(code, { "Content-Type": "text/plain", ...headers });
    res.end(req.method === "HEAD" ? undefined : body);
  };
  if ((req.method !== "GET" && req.method !== "HEAD") || m === null) return end(404, {}, "Entry not found");
  const [, name, revision, file] = m;
  const repo = repoAt(hub, name);
  if (repo === undefined) return end(401, { "X-Error-Code": "RepoNotFound" }, "Repository not found");
  if (repo.token !== undefined && req.headers.authorization !== `Bearer ${repo.token}`)
    return end(401, { "X-Error-Code": "GatedRepo" }, "Access to this model is restricted");
  if (decodeURIComponent(revision) !== "main" && revision !== repo.commit)
    return end(404, { "X-Error-Code": "RevisionNotFound" }, "Revision not found");
  const f = repo.files.find((x) => x.f === decodeURIComponent(file));
  if (f === undefined) return end(404, { "X-Error-Code": "EntryNotFound" }, "Entry not found");
  const lfs = f.f.endsWith(".safetensors") ? { "X-Linked-Size": String(f.data.length), "X-Linked-Etag": f.tag } : {};
  res.writeHead(200, {
    "Content-Type": "application/octet-stream",
    "Content-Length": String(f.data.length),
    ETag: `"${f.tag}"`,
    "X-Repo-Commit": repo.commit,
    ...lfs,
  });
  res.end(req.method === "HEAD" ? undefined : f.data);
});
server.listen(Number(port), host, () => process.stdout.write(`hub on ${host}:${port}\n`));
