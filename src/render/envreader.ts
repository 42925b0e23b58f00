/**
 * Reads a recipe .env as it is on a node: our render, an older pulse render, or a file that
 * somebody edited by hand. It is tolerant (it never throws) and reads values the way bash would
 * for the forms people write: KEY=value, KEY="value", KEY='value', `export KEY=...`, comments and
 * blank lines. Secrets (HF_TOKEN=, API_KEY=) are kept apart, verbatim, so that the writer can
 * carry them over; they are not in `keys`, not in `body` and not in any message.
 */
import { sha256 } from "./identity";
import { isSecretKey } from "./keys";

export interface ParsedEnvFile {
  /** Header lines `# sm121-<name>: value` (or `# pulse-<name>:`) by name without the prefix. */
  header: Record<string, string>;
  /** Non-secret keys; a later assignment wins, as in bash. */
  keys: Record<string, string>;
  /** The non-secret assignment lines, verbatim, each ending with "\n". */
  body: string;
  bodySha256: string;
  /** HF_TOKEN= / API_KEY= lines, verbatim. */
  secretLines: string[];
  /** Whether the body differs from the header's sha256 (or the header has none): edited after the render. */
  edited: boolean;
  /** Lines that were ignored, by number and reason (never with a value). */
  problems: string[];
}

const HEADER = /^#[ \t]*(?:sm121|pulse)-([A-Za-z0-9-]+):[ \t]?(.*)$/;
const ASSIGNMENT = /^[ \t]*(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=/;

export function parseEnvFile(text: string): ParsedEnvFile {
  const src = text.replace(/\r\n/g, "\n");
  const header: Record<string, string> = {};
  const keys: Record<string, string> = {};
  const bodyLines: string[] = [];
  const secretLines: string[] = [];
  const problems: string[] = [];
  let p = 0;
  let line = 1;
  while (p < src.length) {
    const eol = lineEnd(src, p);
    const lineText = src.slice(p, eol);
    const trimmed = lineText.trim();
    if (trimmed === "" || trimmed.startsWith("#")) {
      const h = HEADER.exec(trimmed);
      if (h !== null && h[1] !== undefined && !Object.hasOwn(header, h[1])) header[h[1]] = (h[2] ?? "").trimEnd();
      p = eol + 1;
      line += 1;
      continue;
    }
    const m = ASSIGNMENT.exec(lineText);
    if (m === null) {
      problems.push(`line ${line}: not KEY=value, a comment or a blank line; ignored`);
      p = eol + 1;
      line += 1;
      continue;
    }
    const key = m[1] ?? "";
    const word = readWord(src, p + m[0].length);
    const end = lineEnd(src, word.end);
    const raw = src.slice(p, end);
    if (!word.closed) problems.push(`line ${line}: the value of ${key} has no closing quote`);
    else if (!/^([ \t]+#.*)?[ \t]*$/.test(src.slice(word.end, end))) {
      problems.push(`line ${line}: text after the value of ${key}; ignored`);
    }
    if (isSecretKey(key)) secretLines.push(raw);
    else {
      keys[key] = word.value;
      bodyLines.push(raw);
    }
    line += raw.split("\n").length;
    p = end + 1;
  }
  const body = bodyLines.map((l) => `${l}\n`).join("");
  const bodySha256 = sha256(body);
  return { header, keys, body, bodySha256, secretLines, edited: header.sha256 !== bodySha256, problems };
}

export interface KeyDiff {
  added: string[];
  removed: string[];
  changed: string[];
}

/**
 * Key names only, sorted. Secret keys are left out: the writer carries them over from the old
 * file, so they neither come nor go with a render, and their values are never compared in a plan.
 */
export function diffKeys(before: Record<string, string>, after: Record<string, string>): KeyDiff {
  const names = (r: Record<string, string>): string[] => Object.keys(r).filter((k) => !isSecretKey(k));
  const added = names(after).filter((k) => !Object.hasOwn(before, k));
  const removed = names(before).filter((k) => !Object.hasOwn(after, k));
  const changed = names(after).filter((k) => Object.hasOwn(before, k) && before[k] !== after[k]);
  return { added: added.sort(), removed: removed.sort(), changed: changed.sort() };
}

function lineEnd(src: string, from: number): number {
  const i = src.indexOf("\n", from);
  return i < 0 ? src.length : i;
}

/** Reads one bash word from `i`: quoted parts, backslash escapes, up to white space. */
function readWord(src: string, start: number): { value: string; end: number; closed: boolean } {
  let value = "";
  let i = start;
  while (i < src.length) {
    const c = src.charAt(i);
    if (c === " " || c === "\t" || c === "\n") break;
    if (c === "'") {
      const close = src.indexOf("'", i + 1);
      if (close < 0) return { value: value + src.slice(i + 1), end: src.length, closed: false };
      value += src.slice(i + 1, close);
      i = close + 1;
    } else if (c === '"') {
      const r = readDoubleQuoted(src, i + 1);
      value += r.value;
      i = r.end;
      if (!r.closed) return { value, end: i, closed: false };
    } else if (c === "\\") {
      const next = src.charAt(i + 1);
      if (next !== "\n") value += next;
      i += 2;
    } else {
      value += c;
      i += 1;
    }
  }
  return { value, end: Math.min(i, src.length), closed: true };
}

/** Inside double quotes a backslash escapes only $ ` " \ and a newline, as in bash. */
function readDoubleQuoted(src: string, start: number): { value: string; end: number; closed: boolean } {
  let value = "";
  let i = start;
  while (i < src.length) {
    const c = src.charAt(i);
    if (c === '"') return { value, end: i + 1, closed: true };
    const next = src.charAt(i + 1);
    if (c === "\\" && '$`"\\\n'.includes(next) && next !== "") {
      if (next !== "\n") value += next;
      i += 2;
      continue;
    }
    value += c;
    i += 1;
  }
  return { value, end: src.length, closed: false };
}
