/**
 * A file sm121 keeps for a program beside the engines (the gateway's backends, Prometheus' scrape
 * targets): on the machine that runs Pulumi, or on a node of the site. Written atomically (a
 * temporary file renamed over it), with a backup of an old file nobody can rebuild; read back
 * for refresh and for the plan-time look.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { Dialer, SshAuth } from "../remote";
import { sha256 } from "../render/identity";
import type { NodeConn } from "../render/types";
import { expandHome } from "../text/home";
import { nodePath, quote } from "../text/shell";
import { utcStamp } from "./outcome";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";

/** Where the file is: `path` on the machine that runs Pulumi, or on `node`. */
export interface Placed {
  path: string;
  node?: { name: string; conn: NodeConn };
}

/** What the plan-time look found: the file's sha256 (null: no file), or why it could not look. */
export type FileLook = { sha256: string | null } | { unknown: string };

/** `spark1:~/prometheus/sm121.json`, or the local path. */
export function placeName(p: Placed): string {
  return p.node === undefined ? p.path : `${p.node.name}:${p.path}`;
}

async function onNode<T>(
  p: Placed,
  auth: SshAuth,
  script: string,
  step: string,
  read: (records: readonly NodeRecord[]) => T,
): Promise<T> {
  const n = p.node;
  if (n === undefined) throw new Error(`${p.path}: not on a node`);
  // Loaded by the operations that reach a node, not by every provider process's first check.
  const { hostFor, withHosts } = await import("../remote");
  return withHosts([{ node: n.name, conn: n.conn }], auth, async (hosts) =>
    read((await hostFor(hosts, n.name).run(script, { step })).records),
  );
}

/** The script that prints the file as `file:<base64>`, or nothing when there is none. */
function readScript(p: Placed): string {
  const f = nodePath(p.path);
  const found = printRecord("placedFile", '"content64":"%s"', `"$(base64 -w0 < ${f})"`);
  return `if [ -f ${f} ]; then ${found}; else ${printRecord("placedFile", '"content64":null')}; fi`;
}

function readOutput(records: readonly NodeRecord[]): string | undefined {
  const b64 = firstRecord(records, "placedFile")?.content64;
  return b64 === undefined || b64 === null ? undefined : Buffer.from(b64, "base64").toString("utf8");
}

function readLocal(p: Placed): string | undefined {
  const file = expandHome(p.path);
  return existsSync(file) ? readFileSync(file, "utf8") : undefined;
}

/** The file's text, or undefined when there is none. */
export async function readPlaced(p: Placed, auth: SshAuth, step: string): Promise<string | undefined> {
  if (p.node === undefined) return readLocal(p);
  return onNode(p, auth, readScript(p), step, readOutput);
}

/**
 * Writes `content`. An old file whose sha256 is none of `known` (what sm121 wrote or writes now)
 * is kept as `<path>.sm121-bak-<UTC time>` first; the backup's path is returned.
 */
export async function writePlaced(
  p: Placed,
  auth: SshAuth,
  content: string,
  known: readonly string[],
  step: string,
): Promise<string | undefined> {
  const bak = `${p.path}.sm121-bak-${utcStamp()}`;
  if (p.node === undefined) {
    const file = expandHome(p.path);
    mkdirSync(dirname(file), { recursive: true });
    let kept: string | undefined;
    if (existsSync(file) && !known.includes(sha256(readFileSync(file)))) {
      copyFileSync(file, expandHome(bak));
      kept = bak;
    }
    writeFileSync(`${file}.sm121-tmp`, content);
    renameSync(`${file}.sm121-tmp`, file);
    return kept;
  }
  const f = nodePath(p.path);
  const tmp = `${f}.sm121-tmp`;
  const keep = known.length === 0 ? "*" : `${known.map(quote).join("|")}) ;; *`;
  const script = [
    `mkdir -p "$(dirname ${f})"`,
    `printf '%s' ${quote(Buffer.from(content).toString("base64"))} | base64 -d > ${tmp}`,
    `if [ -f ${f} ]; then case "$(sha256sum < ${f} | cut -d' ' -f1)" in`,
    `  ${keep}) cp -p ${f} ${nodePath(bak)} && ${printRecord("placedKept")} ;;`,
    "esac; fi",
    `mv ${tmp} ${f}`,
  ].join("\n");
  const kept = (records: readonly NodeRecord[]) => (firstRecord(records, "placedKept") === undefined ? undefined : bak);
  return onNode(p, auth, script, step, kept);
}

export async function removePlaced(p: Placed, auth: SshAuth, step: string): Promise<void> {
  if (p.node === undefined) rmSync(expandHome(p.path), { force: true });
  else await onNode(p, auth, `rm -f ${nodePath(p.path)}`, step, () => undefined);
}

/** The plan-time look: read-only; a node it cannot reach makes the file unknown, never missing. */
export async function lookPlaced(p: Placed, dial: Dialer): Promise<FileLook> {
  try {
    const n = p.node;
    let text: string | undefined;
    if (n === undefined) text = readLocal(p);
    else {
      const host = await dial.host(n.name, n.conn);
      text = readOutput((await host.run(readScript(p), { step: `look at ${p.path}` })).records);
    }
    return { sha256: text === undefined ? null : sha256(text) };
  } catch (e) {
    return { unknown: (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "" };
  }
}
