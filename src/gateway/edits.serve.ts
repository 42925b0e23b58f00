/**
 * The gateway file's one writer. Every write of the file goes through here: the GatewayFragment's
 * whole file at the end of an up, and the edits of the steps a run takes on the way (./steps: a
 * failed serve's endpoints disabled, a replica held out for its restart and put back, a surge's
 * endpoints added and dropped). Each is a read, an edit and an atomic write under one lock per file,
 * so that two edits of one run never lose each other's change: every resource of a run is served by
 * one provider process, and the lock is held in it (a chain of promises per file).
 */
import type { GatewayFormat } from "../recipe/types";
import { sha256 as sha } from "../render/identity";
import type { NodeConn } from "../render/types";
import type { SshAuth } from "../remote";
import { readPlaced, writePlaced } from "../serve/sitefile";
import { say, t, type Msg } from "../text/messages";

/** Where the file is, and how to reach it. */
export interface Place {
  path: string;
  format: GatewayFormat;
  node?: { name: string; conn: NodeConn };
  auth: SshAuth;
}

/**
 * The file to write: its text, and what to say. The text is the same bytes in every language (the
 * reasons in it are English, ./file), so that operators with different locales see no drift; the
 * warnings and the note are said in the operator's.
 */
export interface Content {
  text: string;
  warnings: string[];
  restartNote: Msg;
}

/** `spark3:~/gateway/litellm.yaml`, or the local path. */
export const where = (p: Pick<Place, "path" | "node">): string =>
  `${p.node === undefined ? "" : `${p.node.name}:`}${p.path}`;

/** The edits waiting for each file, by where it is. */
const queues = new Map<string, Promise<unknown>>();

/** Runs `work` once every edit of the same file queued before it has ended. */
function locked<T>(p: Place, work: () => Promise<T>): Promise<T> {
  const key = where(p);
  const next = (queues.get(key) ?? Promise.resolve()).then(work, work);
  queues.set(
    key,
    next.then(
      () => undefined,
      () => undefined,
    ),
  );
  return next;
}

/** The file as it is ("" when it does not exist). */
export async function readText(p: Place): Promise<string> {
  return (await readPlaced(p, p.auth, "read the gateway file")) ?? "";
}

/** `known`: the sha256 of files sm121 wrote (no backup of those; a different old file is kept as one). */
async function write(p: Place, c: Content, known: readonly string[], log: (m: string) => void): Promise<string> {
  for (const w of c.warnings) log(t("serve.warning", { warning: w }));
  await writePlaced(p, p.auth, c.text, [sha(c.text), ...known], "write the gateway file");
  log(t("serve.gatewayWrote", { format: p.format, where: where(p), note: say(c.restartNote) }));
  return sha(c.text);
}

/** Writes the whole file; returns its sha256. `known`: what sm121 wrote there before. */
export function writeWhole(
  p: Place,
  c: Content,
  known: ReadonlyArray<string | undefined>,
  log: (m: string) => void,
): Promise<string> {
  return locked(p, () =>
    write(
      p,
      c,
      known.filter((x): x is string => x !== undefined),
      log,
    ),
  );
}

/**
 * Edits the file as it is: `change` gets its text ("" when there is none) and returns what to write,
 * or undefined to leave it. The file as it was is kept in what it becomes: no backup of it.
 */
export function edit<T>(
  p: Place,
  change: (text: string) => { content?: Content; result: T },
  log: (m: string) => void,
): Promise<T> {
  return locked(p, async () => {
    const text = await readText(p);
    const { content, result } = change(text);
    if (content !== undefined && content.text !== text) await write(p, content, [sha(text)], log);
    return result;
  });
}
