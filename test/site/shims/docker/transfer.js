"use strict";
// docker pull | save | load. The site's registry is <site>/registry/images.json (the
// same spec as a node's docker-images.json, with an "id"); a pull copies an entry to
// the node. `save` streams an archive of the image (a header line naming the image,
// then its size in filler bytes for the layers), `load` takes it back, refusing a
// truncated one as the daemon refuses a torn tar.
const fs = require("node:fs");
const path = require("node:path");
const { DaemonError, nodeRoot } = require("./store");
const { parseFlags, UsageError } = require("./args");
const { normalizeRef, findImage, imageId, imageSize, storeImage } = require("./images");

const MAGIC = "sm121-test-site-image-archive v1 ";

function registry() {
  const file = path.join(process.env.SIM_SITE_DIR || "/nonexistent", "registry", "images.json");
  try {
    return JSON.parse(fs.readFileSync(file, "utf8"));
  } catch {
    return {};
  }
}

function pullCommand(argv) {
  const { opts, args } = parseFlags("pull", argv, [
    { long: "quiet", short: "q", kind: "bool" },
    { long: "all-tags", short: "a", kind: "bool", unsupported: "one tag at a time" },
    { long: "platform", kind: "string" },
  ], true);
  if (args.length !== 1) throw new UsageError(`"docker pull" requires exactly 1 argument.`, "pull");
  const ref = normalizeRef(args[0]);
  const entry = Object.entries(registry()).find(([k]) => normalizeRef(k) === ref);
  if (entry === undefined) throw new DaemonError(`Error response from daemon: manifest for ${ref} not found: manifest unknown: manifest unknown`);
  const spec = entry[1];
  const root = nodeRoot();
  const had = findImage(root, ref);
  const tag = ref.slice(ref.lastIndexOf(":") + 1);
  const same = had !== null && imageId(ref, had) === imageId(ref, spec);
  if (!same) storeImage(root, ref, spec);
  if (!opts.quiet) {
    process.stdout.write(`${tag}: Pulling from ${ref.slice(0, ref.lastIndexOf(":"))}\n`);
    process.stdout.write(`Digest: ${imageId(ref, spec)}\n`);
    process.stdout.write(same ? `Status: Image is up to date for ${ref}\n` : `Status: Downloaded newer image for ${ref}\n`);
  }
  process.stdout.write(`${ref}\n`);
  return 0;
}

function saveCommand(argv) {
  const { opts, args } = parseFlags("save", argv, [
    { long: "output", short: "o", kind: "string" },
    { long: "platform", kind: "string", unsupported: "one platform" },
  ], true);
  if (args.length !== 1) throw new UsageError(args.length === 0 ? `"docker save" requires at least 1 argument.` : "the test-site docker saves one image at a time", "save");
  const root = nodeRoot();
  const ref = normalizeRef(args[0]);
  const image = findImage(root, ref);
  if (image === null) throw new DaemonError(`Error response from daemon: No such image: ${ref}`);
  let fd = 1;
  if (opts.output !== undefined) fd = fs.openSync(opts.output, "w");
  else if (require("node:tty").isatty(1)) throw new DaemonError("cowardly refusing to save to a terminal. Use the -o flag or redirect");
  const { ref: _r, ...spec } = image;
  const size = imageSize(image);
  fs.writeSync(fd, `${MAGIC}${JSON.stringify({ ref, spec: { ...spec, id: imageId(ref, image), size } })}\n`);
  const chunk = Buffer.alloc(Math.min(size, 1 << 20), imageId(ref, image).slice(7));
  for (let left = size; left > 0; left -= chunk.length) fs.writeSync(fd, left >= chunk.length ? chunk : chunk.subarray(0, left));
  if (fd !== 1) fs.closeSync(fd);
  return 0;
}

function loadCommand(argv) {
  const { opts, args } = parseFlags("load", argv, [
    { long: "input", short: "i", kind: "string" },
    { long: "quiet", short: "q", kind: "bool" },
  ], true);
  if (args.length > 0) throw new UsageError(`"docker load" accepts no arguments.`, "load");
  if (opts.input === undefined && require("node:tty").isatty(0)) throw new DaemonError("requested load from stdin, but stdin is empty");
  const data = fs.readFileSync(opts.input === undefined ? 0 : opts.input);
  if (data.length === 0) throw new DaemonError("requested load from stdin, but stdin is empty");
  const nl = data.indexOf(10);
  const head = nl < 0 ? "" : data.subarray(0, nl).toString("utf8");
  if (!head.startsWith(MAGIC)) throw new DaemonError("Error response from daemon: archive/tar: invalid tar header");
  const { ref, spec } = JSON.parse(head.slice(MAGIC.length));
  if (data.length - nl - 1 !== spec.size) throw new DaemonError("Error response from daemon: unexpected EOF");
  storeImage(nodeRoot(), ref, spec);
  if (!opts.quiet) process.stdout.write(`Loaded image: ${ref}\n`);
  return 0;
}

module.exports = { pullCommand, saveCommand, loadCommand };
