"use strict";
// The images a node "has": <root>/etc/docker-images.json
//   { "repo/name:tag": { "entrypoint": ["vllm", "serve"] | null, "cmd": [...]? } }
// There is no registry: an unknown image fails like an offline pull.
const fs = require("node:fs");
const path = require("node:path");
const crypto = require("node:crypto");
const { DaemonError } = require("./store");

function normalizeRef(ref) {
  let r = ref.replace(/^docker\.io\//, "").replace(/^library\//, "");
  const last = r.slice(r.lastIndexOf("/") + 1);
  if (!last.includes(":") && !r.includes("@")) r += ":latest";
  return r;
}

function knownImages(root) {
  const file = path.join(root, "etc", "docker-images.json");
  let raw;
  try {
    raw = JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    raw = {};
  }
  const out = new Map();
  for (const [ref, spec] of Object.entries(raw)) out.set(normalizeRef(ref), { ref: normalizeRef(ref), ...spec });
  return out;
}

function findImage(root, ref) {
  return knownImages(root).get(normalizeRef(ref)) || null;
}

function resolveImage(root, ref) {
  const image = findImage(root, ref);
  if (image) return image;
  process.stderr.write(`Unable to find image '${normalizeRef(ref)}' locally\n`);
  throw new DaemonError(
    'docker: Error response from daemon: Get "https://registry-1.docker.io/v2/": dial tcp: lookup registry-1.docker.io: no such host',
    125,
  );
}

function imageId(ref) {
  return `sha256:${crypto.createHash("sha256").update(normalizeRef(ref)).digest("hex")}`;
}

function imageInspect(root, refs) {
  const found = [];
  const missing = [];
  for (const ref of refs) {
    const image = findImage(root, ref);
    if (!image) {
      missing.push(ref);
      continue;
    }
    found.push({
      Id: imageId(ref),
      RepoTags: [image.ref],
      RepoDigests: [],
      Created: "2026-01-01T00:00:00Z",
      Architecture: "arm64",
      Os: "linux",
      Config: { Entrypoint: image.entrypoint || null, Cmd: image.cmd || null, Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"], Labels: image.labels || {} },
    });
  }
  return { found, missing };
}

module.exports = { normalizeRef, resolveImage, imageId, imageInspect, findImage };
