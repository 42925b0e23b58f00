/**
 * Where a field stands in the operator's file. smol-toml and zod report values, not places, so
 * these helpers find the line and column of a dotted field path in the source text.
 */
import { LineCounter, parseDocument, isMap, isSeq, type Node as YamlNode } from "yaml";
import { editDistance } from "../text/distance";

export interface Position {
  line: number;
  col: number;
}

/** A position in a named file; line 0 when the value has no line of its own (see siteSource). */
export interface Place extends Position {
  file: string;
}

export type FieldPath = ReadonlyArray<string | number>;

export function dotted(path: FieldPath): string {
  let out = "";
  for (const p of path) {
    if (typeof p === "number") out += `[${p}]`;
    else out += out === "" ? short(p) : `.${short(p)}`;
  }
  return out;
}

/** A key as shown in a message: a hostile 200 KB key name is cut to its start. */
function short(key: string): string {
  return key.length > 64 ? `${key.slice(0, 61)}...` : key;
}

const TABLE_HEADER = /^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$/;

function keyPattern(key: string): RegExp {
  // A key this long is no key of ours; V8 cannot compile a pattern of a 200 KB key anyway.
  if (key.length > 256) return /(?!)/;
  const esc = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  return new RegExp(`^(\\s*)(${esc}|"${esc}")\\s*=`);
}

/**
 * The position of `path` in a TOML document: the key of the deepest named field that exists,
 * inside its table. Array indices point into the array's lines when it spans several lines.
 */
export function locateToml(text: string, path: FieldPath): Position {
  const lines = text.split("\n");
  const names = path.filter((p): p is string => typeof p === "string");
  for (let depth = names.length; depth > 0; depth--) {
    const table = names.slice(0, depth - 1).join(".");
    const key = names[depth - 1] ?? "";
    const hit = findKeyInTable(lines, table, key);
    if (hit !== undefined) {
      if (depth === names.length) return refineIndex(lines, hit, path);
      return hit;
    }
    const header =
      findTable(lines, names.slice(0, depth).join(".")) ?? findSubTable(lines, names.slice(0, depth).join("."));
    if (header !== undefined) return header;
  }
  return { line: 1, col: 1 };
}

function findTable(lines: string[], table: string): Position | undefined {
  for (let i = 0; i < lines.length; i++) {
    const m = TABLE_HEADER.exec(lines[i] ?? "");
    if (m !== null && m[1] === table) return { line: i + 1, col: (lines[i] ?? "").indexOf("[") + 1 };
  }
  return undefined;
}

/** The first `[table.sub]` header, for a table written only through its sub-tables. */
function findSubTable(lines: string[], table: string): Position | undefined {
  for (let i = 0; i < lines.length; i++) {
    const m = TABLE_HEADER.exec(lines[i] ?? "");
    if (m !== null && (m[1] ?? "").startsWith(`${table}.`))
      return { line: i + 1, col: (lines[i] ?? "").indexOf("[") + 1 };
  }
  return undefined;
}

function findKeyInTable(lines: string[], table: string, key: string): Position | undefined {
  let current = "";
  const direct = keyPattern(key);
  const parts = table === "" ? [] : table.split(".");
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? "";
    const header = TABLE_HEADER.exec(line);
    if (header !== null) {
      current = header[1] ?? "";
      continue;
    }
    // `key = ...` inside [table], or `sub.key = ...` written as a dotted key in a parent table.
    for (let cut = parts.length; cut >= 0; cut--) {
      if (current !== parts.slice(0, cut).join(".")) continue;
      const prefix = parts.slice(cut).join(".");
      const pattern = prefix === "" ? direct : keyPattern(`${prefix}.${key}`);
      const m = pattern.exec(line);
      if (m !== null) return { line: i + 1, col: (m[1] ?? "").length + 1 };
    }
  }
  return undefined;
}

function refineIndex(lines: string[], at: Position, path: FieldPath): Position {
  const last = path[path.length - 1];
  if (typeof last !== "number") return at;
  const first = lines[at.line - 1] ?? "";
  if (first.includes("]")) {
    const start = first.indexOf("[");
    const col = nthElementColumn(first, start, last);
    return col === undefined ? at : { line: at.line, col };
  }
  // A multi-line array: one element per line is the common layout.
  let seen = -1;
  for (let i = at.line; i < lines.length; i++) {
    const l = lines[i] ?? "";
    if (/^\s*\]/.test(l)) break;
    if (/^\s*(#|$)/.test(l)) continue;
    seen++;
    if (seen === last) return { line: i + 1, col: l.search(/\S/) + 1 };
  }
  return at;
}

function nthElementColumn(line: string, open: number, n: number): number | undefined {
  let idx = 0;
  let inStr = false;
  let quote = "";
  for (let i = open + 1; i < line.length; i++) {
    const c = line[i];
    if (inStr) {
      if (c === "\\") i++;
      else if (c === quote) inStr = false;
      continue;
    }
    if (c === '"' || c === "'") {
      if (idx === n) return i + 1;
      inStr = true;
      quote = c;
    } else if (c === ",") idx++;
    else if (c !== " " && c !== "]" && idx === n) return i + 1;
  }
  return undefined;
}

/** Parses the YAML once and locates any number of paths in it (one parse per error is quadratic). */
export function yamlLocator(text: string): (path: FieldPath) => Position {
  let parsed: { root: YamlNode | null; counter: LineCounter } | undefined;
  return (path) => {
    if (parsed === undefined) {
      const counter = new LineCounter();
      parsed = {
        root: parseDocument(text, { lineCounter: counter, keepSourceTokens: false }).contents as YamlNode | null,
        counter,
      };
    }
    return locateIn(parsed.root, parsed.counter, path);
  };
}

function locateIn(root: YamlNode | null, counter: LineCounter, path: FieldPath): Position {
  let node: YamlNode | null | undefined = root;
  let best: number | undefined;
  for (const p of path) {
    if (isMap(node)) {
      const pair = node.items.find((it) => {
        const k = it.key as { value?: unknown } | null;
        return k !== null && String(k.value) === String(p);
      });
      if (pair === undefined) break;
      const key = pair.key as YamlNode | null;
      if (key?.range) best = key.range[0];
      node = pair.value as YamlNode | null;
    } else if (isSeq(node) && typeof p === "number") {
      const item = node.items[p] as YamlNode | undefined;
      if (item === undefined) break;
      if (item.range) best = item.range[0];
      node = item;
    } else break;
  }
  if (best === undefined) return { line: 1, col: 1 };
  const pos = counter.linePos(best);
  return { line: pos.line, col: pos.col };
}

/**
 * Paths of own `__proto__` keys. The parsers keep such a key, but zod's records skip it, so a node
 * or an env key of that name would vanish without a word.
 */
export function protoKeys(v: unknown, path: FieldPath = []): FieldPath[] {
  if (typeof v !== "object" || v === null) return [];
  const own = Object.hasOwn(v, "__proto__") ? [[...path, "__proto__"]] : [];
  return [...own, ...Object.entries(v).flatMap(([k, x]) => protoKeys(x, [...path, Array.isArray(v) ? Number(k) : k]))];
}

/**
 * The closest of `known` to `word`, for "did you mean". A swap of two adjacent letters counts as
 * one edit, and a short word may be off by fewer edits (FOO is not PORT).
 */
export function didYouMean(word: string, known: readonly string[]): string | undefined {
  if (word.length > 64) return undefined;
  let best: string | undefined;
  let bestD = Math.max(1, Math.min(3, Math.floor(word.length / 3))) + 1;
  for (const k of known) {
    const d = editDistance(word.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      bestD = d;
      best = k;
    }
  }
  return best;
}
