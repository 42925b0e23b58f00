/**
 * A model in a node's Hugging Face cache, as huggingface_hub lays it out under
 * `$HF_HOME/hub/models--<org>--<name>/`: `blobs/<etag>` (a download in progress is
 * `<etag>.incomplete`), `snapshots/<commit>/<file>` -> `../../blobs/<etag>`, `refs/<branch>` = commit.
 * One read-only script lists it (the manifest); the rest is pure: whether a revision is complete,
 * and what a peer lacks of the source's copy.
 */
import { nodePath } from "../text/shell";

export interface Manifest {
  /** Regular files (path relative to the repo dir) and their sizes. */
  files: Map<string, number>;
  /** Symbolic links and their targets. */
  links: Map<string, string>;
  dirs: Set<string>;
  /** refs/<name> -> the commit it names. */
  refs: Map<string, string>;
  /** snapshots/<commit>/model.safetensors.index.json -> its shard file names. */
  shards: Map<string, string[]>;
}

const INDEX = "model.safetensors.index.json";
const COMMIT = /^[0-9a-f]{40}$/;

/** Lists the repo dir: `f size path`, `l path<TAB>target`, `d path`, `r name commit`, `i path base64`. */
export function manifestScript(repoDir: string): string {
  const d = nodePath(repoDir);
  return [
    `d=${d}`,
    `[ -d "$d" ] || exit 0`,
    `find "$d" -mindepth 1 \\( -type f -printf 'f %s %P\\n' \\) -o \\( -type l -printf 'l %P\\t%l\\n' \\) ` +
      `-o \\( -type d -printf 'd %P\\n' \\)`,
    `for r in "$d"/refs/*; do [ -f "$r" ] && ` +
      `printf 'r %s %s\\n' "\${r##*/}" "$(head -c 64 "$r" | tr -dc '0-9a-f')"; done`,
    `for i in "$d"/snapshots/*/${INDEX}; do [ -f "$i" ] && ` +
      `printf 'i %s %s\\n' "\${i#"$d"/}" "$(base64 -w0 "$i")"; done`,
    "true",
  ].join("\n");
}

export function parseManifest(text: string): Manifest {
  const m: Manifest = { files: new Map(), links: new Map(), dirs: new Set(), refs: new Map(), shards: new Map() };
  for (const line of text.split("\n")) {
    const kind = line.slice(0, 2);
    const rest = line.slice(2);
    if (kind === "f ") {
      const sp = rest.indexOf(" ");
      m.files.set(rest.slice(sp + 1), Number(rest.slice(0, sp)));
    } else if (kind === "l ") {
      const tab = rest.indexOf("\t");
      m.links.set(rest.slice(0, tab), rest.slice(tab + 1));
    } else if (kind === "d ") {
      m.dirs.add(rest);
    } else if (kind === "r ") {
      const [name = "", commit = ""] = rest.split(" ");
      m.refs.set(name, commit);
    } else if (kind === "i ") {
      const sp = rest.indexOf(" ");
      m.shards.set(rest.slice(0, sp), shardsOf(Buffer.from(rest.slice(sp + 1), "base64").toString("utf8")));
    }
  }
  return m;
}

/** The shard files a safetensors index names; an unreadable index names one that cannot exist. */
function shardsOf(json: string): string[] {
  try {
    const v = JSON.parse(json) as { weight_map?: Record<string, string> };
    return [...new Set(Object.values(v.weight_map ?? {}))];
  } catch {
    return [`${INDEX} (unreadable)`];
  }
}

/** The commit a revision names in this cache: a commit hash is itself, a branch or tag is its ref. */
export function commitOf(m: Manifest, revision: string): string | undefined {
  if (COMMIT.test(revision)) return revision;
  const c = m.refs.get(revision);
  return c !== undefined && COMMIT.test(c) ? c : undefined;
}

/** The blob a snapshot link points at (`../../blobs/x` from snapshots/<commit>/<file>), as a repo path. */
function blobOf(link: string, target: string): string | undefined {
  const parts = link.split("/").slice(0, -1);
  for (const seg of target.split("/")) {
    if (seg === "..") parts.pop();
    else parts.push(seg);
  }
  const p = parts.join("/");
  return p.startsWith("blobs/") ? p : undefined;
}

export interface Completeness {
  commit?: string;
  /** Why the revision is not complete here (empty: complete). */
  missing: string[];
  /** The revision's files (snapshot entries and their blobs) with sizes. */
  files: number;
  bytes: number;
}

/** Whether `revision` is complete in this cache: its snapshot, every link's blob, every indexed shard. */
export function completeness(m: Manifest, revision: string): Completeness {
  const commit = commitOf(m, revision);
  if (commit === undefined)
    return { missing: [`no refs/${revision}: the revision was never downloaded here`], files: 0, bytes: 0 };
  const snap = `snapshots/${commit}/`;
  const entries = [...m.links.keys(), ...m.files.keys()].filter((p) => p.startsWith(snap));
  const missing: string[] = [];
  let bytes = 0;
  if (entries.length === 0) missing.push(`${snap} is empty or absent`);
  for (const p of entries) {
    const target = m.links.get(p);
    if (target === undefined) {
      bytes += m.files.get(p) ?? 0;
      continue;
    }
    const blob = blobOf(p, target);
    const size = blob === undefined ? undefined : m.files.get(blob);
    if (size === undefined)
      missing.push(
        `${p}: its blob ${blob ?? target} is missing` +
          (blob !== undefined && m.files.has(`${blob}.incomplete`) ? " (a download or copy was cut short)" : ""),
      );
    else bytes += size;
  }
  for (const shard of m.shards.get(`${snap}${INDEX}`) ?? []) {
    if (!m.links.has(`${snap}${shard}`) && !m.files.has(`${snap}${shard}`))
      missing.push(`${snap}${shard}: named by ${INDEX}, not in the snapshot`);
  }
  return { commit, missing, files: entries.length, bytes };
}

export type CopyItem =
  | { kind: "d"; path: string }
  | { kind: "f"; path: string; offset: number; length: number }
  | { kind: "l"; path: string; target: string };

export interface CopyPlan {
  items: CopyItem[];
  /** Bytes to send, and bytes the peer already has of the revision. */
  bytes: number;
  present: number;
}

/**
 * What `peer` lacks of the source's revision `commit`: directories, then blob bytes (a partial
 * `<blob>.incomplete` is continued from its size; a file of another size is sent again), then
 * the snapshot's links, and the refs last, so that a copy cut short never looks complete.
 */
export function copyPlan(source: Manifest, commit: string, peer: Manifest): CopyPlan {
  const snap = `snapshots/${commit}/`;
  const links = [...source.links].filter(([p]) => p.startsWith(snap));
  const plain = [...source.files].filter(([p]) => p.startsWith(snap));
  const blobs = new Map<string, number>();
  for (const [p, t] of links) {
    const b = blobOf(p, t);
    const size = b === undefined ? undefined : source.files.get(b);
    if (b !== undefined && size !== undefined) blobs.set(b, size);
  }
  const dirs = [...source.dirs]
    .filter((d) => d === "blobs" || d === "refs" || d === "snapshots" || `${d}/`.startsWith(snap))
    .filter((d) => !peer.dirs.has(d));
  const items: CopyItem[] = dirs.map((path) => ({ kind: "d", path }));
  let bytes = 0;
  let present = 0;
  for (const [path, size] of [...blobs, ...plain]) {
    const whole = peer.files.get(path);
    const part = peer.files.get(`${path}.incomplete`);
    if (whole === size) {
      present += size;
      continue;
    }
    const offset = whole === undefined && part !== undefined && part <= size ? part : 0;
    present += offset;
    bytes += size - offset;
    items.push({ kind: "f", path, offset, length: size - offset });
  }
  for (const [path, target] of links) if (peer.links.get(path) !== target) items.push({ kind: "l", path, target });
  for (const [name, c] of source.refs) {
    if (c === commit && peer.refs.get(name) !== commit)
      items.push({ kind: "f", path: `refs/${name}`, offset: 0, length: source.files.get(`refs/${name}`) ?? 0 });
  }
  return { items, bytes, present };
}

/**
 * One stream for a chain of peers (each writes what it lacks and forwards all): every item any
 * peer needs, a file from the smallest offset any peer continues from. A peer skips the bytes it
 * already holds of a blob (the receiver's rule), so each still resumes where its copy stopped.
 */
export function chainPlan(plans: readonly CopyPlan[]): CopyPlan {
  const items = new Map<string, CopyItem>();
  for (const p of plans) {
    for (const it of p.items) {
      const key = `${it.kind} ${it.path}`;
      const had = items.get(key);
      if (had === undefined || (had.kind === "f" && it.kind === "f" && it.offset < had.offset)) items.set(key, it);
    }
  }
  const order = (it: CopyItem) =>
    it.kind === "d" ? 0 : it.kind === "f" && !it.path.startsWith("refs/") ? 1 : it.kind === "l" ? 2 : 3;
  const all = [...items.values()].sort((a, b) => order(a) - order(b));
  const bytes = all.reduce((n, it) => n + (it.kind === "f" && !it.path.startsWith("refs/") ? it.length : 0), 0);
  return { items: all, bytes, present: Math.min(...plans.map((p) => p.present)) };
}
