// A checkpoint placed in a node's HF cache in huggingface_hub's layout, as a Spark that already
// serves the model has it: refs/main, blobs/<sha256>, snapshots/<commit>/<file> -> ../../blobs/<sha256>.
// No config.json unless asked: the memory fit reads one when it is there.
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/** Writes `files` of `repo` complete into the cache under `hfHome`; returns the repo dir. */
export function placeCheckpoint(
  hfHome: string,
  repo: string,
  files: Record<string, string | Buffer> = { "README.md": `# ${repo}\n` },
): string {
  const dir = path.join(hfHome, "hub", `models--${repo.replace(/\//g, "--")}`);
  const commit = createHash("sha1").update(repo).digest("hex");
  const snap = path.join(dir, "snapshots", commit);
  fs.mkdirSync(path.join(dir, "refs"), { recursive: true });
  fs.mkdirSync(path.join(dir, "blobs"), { recursive: true });
  fs.mkdirSync(snap, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    const blob = createHash("sha256").update(content).digest("hex");
    fs.writeFileSync(path.join(dir, "blobs", blob), content);
    fs.rmSync(path.join(snap, name), { force: true });
    fs.symlinkSync(`../../blobs/${blob}`, path.join(snap, name));
  }
  fs.writeFileSync(path.join(dir, "refs", "main"), commit);
  return dir;
}
