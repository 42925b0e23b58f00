/**
 * The node protocol: what a node script prints for the program is one line `@sm121 <json>`, a
 * record whose `kind` names its schema (./schemas). One parser reads every record (remote/host's
 * collector, for every step of every operation); readers take records by kind (`recordsOf`,
 * `firstRecord`), never by which key is present. Writers print them through `printRecord`, so a
 * kind no schema knows does not compile.
 */
import { recordKinds, recordSchemas, type NodeRecord, type RecordKind, type RecordOf } from "./schemas";

export type { NodeRecord, RecordKind, RecordOf } from "./schemas";
export { recordKinds } from "./schemas";

export const RECORD_PREFIX = "@sm121 ";

/** A record that is not JSON, has no or an unknown kind, or does not match its kind's schema. */
export class ProtocolError extends Error {
  readonly code = "protocol";
  constructor(
    /** The record's kind, when it named one. */
    readonly record: string | undefined,
    /** What is wrong with it. */
    readonly problem: string,
  ) {
    super(`${record === undefined ? "a node record" : `node record "${record}"`}: ${problem}`);
    this.name = "ProtocolError";
  }
}

function isKind(k: string): k is RecordKind {
  return Object.hasOwn(recordSchemas(), k);
}

/** The kind's name for an error: at most 40 characters of what the node printed. */
function shown(kind: string): string {
  return kind.length > 40 ? `${kind.slice(0, 37)}...` : kind;
}

/**
 * Status scripts stored in the state by releases before records had a kind (`pulumi refresh` and
 * a destroy run the stored ones) print `{"running":...,"startedAt":...,"detail":...}`.
 */
function legacyKind(v: Record<string, unknown>): RecordKind | undefined {
  return Object.hasOwn(v, "running") ? "status" : undefined;
}

/** The record in `json` (what follows RECORD_PREFIX on the line), or a ProtocolError naming it. */
export function parseRecord(json: string): NodeRecord {
  let v: unknown;
  try {
    v = JSON.parse(json);
  } catch (e) {
    throw new ProtocolError(undefined, `not JSON (${e instanceof Error ? e.message : String(e)})`);
  }
  if (v === null || typeof v !== "object" || Array.isArray(v)) throw new ProtocolError(undefined, "not a JSON object");
  const obj = v as Record<string, unknown>;
  const raw = obj["kind"];
  const kind = raw === undefined ? legacyKind(obj) : raw;
  if (typeof kind !== "string") throw new ProtocolError(undefined, 'no "kind"');
  if (!isKind(kind)) {
    throw new ProtocolError(shown(kind), `unknown kind (known: ${recordKinds().join(", ")})`);
  }
  const r = recordSchemas()[kind].safeParse(raw === undefined ? { ...obj, kind } : obj);
  if (r.success) return r.data;
  const issues = r.error.issues.map((i) => `${i.path.length === 0 ? "" : `${i.path.join(".")}: `}${i.message}`);
  throw new ProtocolError(kind, issues.join("; "));
}

/** The record on one stdout line; undefined when the line is none. Throws for a malformed record. */
export function recordOfLine(line: string): NodeRecord | undefined {
  return line.startsWith(RECORD_PREFIX) ? parseRecord(line.slice(RECORD_PREFIX.length)) : undefined;
}

/** The records of one kind, in order. */
export function recordsOf<K extends RecordKind>(records: readonly NodeRecord[], kind: K): Array<RecordOf<K>> {
  return records.filter((r): r is Extract<NodeRecord, { kind: K }> & RecordOf<K> => r.kind === kind);
}

/** The first record of one kind. */
export function firstRecord<K extends RecordKind>(records: readonly NodeRecord[], kind: K): RecordOf<K> | undefined {
  return recordsOf(records, kind)[0];
}

/**
 * The shell line printing one record: `fields` is the JSON after `"kind":"<kind>"` as a printf
 * format (sm121's own text: no `'`), `args` its printf arguments, already quoted.
 */
export function printRecord(kind: RecordKind, fields = "", args = ""): string {
  const format = `${RECORD_PREFIX}{"kind":"${kind}"${fields === "" ? "" : `,${fields}`}}\\n`;
  return `printf '${format}'${args === "" ? "" : ` ${args}`}`;
}

/** The record line of a value known when the script is built (JSON, for a quoted printf). */
export function recordJson<K extends RecordKind>(kind: K, fields: Omit<RecordOf<K>, "kind">): string {
  return `${RECORD_PREFIX}${JSON.stringify({ kind, ...fields })}`;
}
