"use strict";
// The images a node "has": <root>/etc/docker-images.json
//   { "repo/name:tag": { "entrypoint": ["vllm", "serve"] | null, "cmd": [...]?, "id": "sha256:..."?, "size": bytes? } }
// An image without "id" has the id of its reference. `docker run` never pulls: an
// unknown image fails like an offline pull; `docker pull` reads the site's registry
// (see transfer.js).
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
  const file = imagesFile(root);
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

function imagesFile(root) {
  return path.join(root, "etc", "docker-images.json");
}

/** Adds (or retags) an image on the node, as pull and load do. */
function storeImage(root, ref, spec) {
  let raw;
  try {
    raw = JSON.parse(fs.readFileSync(imagesFile(root), "utf8"));
  } catch {
    raw = {};
  }
  for (const k of Object.keys(raw)) if (normalizeRef(k) === normalizeRef(ref)) delete raw[k];
  raw[normalizeRef(ref)] = spec;
  const tmp = `${imagesFile(root)}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(raw, null, 2)}\n`);
  fs.renameSync(tmp, imagesFile(root));
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

/** The image's id: its own, else (an image the site was built with) one derived from the reference. */
function imageId(ref, image) {
  if (image && image.id) return image.id;
  return `sha256:${crypto.createHash("sha256").update(normalizeRef(ref)).digest("hex")}`;
}

/** The bytes `docker save` streams for the image (its layers, here filler). */
function imageSize(image) {
  return image && Number.isInteger(image.size) ? image.size : 64 * 1024;
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
      Id: imageId(ref, image),
      Size: imageSize(image),
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

module.exports = { normalizeRef, resolveImage, imageId, imageSize, imageInspect, findImage, storeImage };
