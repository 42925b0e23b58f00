/**
 * Shared pieces of the hostile-input corpus: what a rejection must look like, encoders that put
 * any string into TOML and YAML source, the payload table, temporary projects, and a fake
 * `docker` that records its argv so rendered scripts can be run for real.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { expect } from "vitest";
import { SpecError, SpecErrors } from "../../src/recipe/errors";

export const CORPUS = join(__dirname, "corpus");

export interface Rejection {
  messages: string[];
  errors: SpecError[];
}

/**
 * What `fn` throws. Anything but a SpecError or SpecErrors fails the test: a returned value means
 * the input was accepted (it could reach a node), a plain TypeError means nobody checked it.
 */
export function rejection(fn: () => unknown): Rejection {
  let result: unknown;
  try {
    result = fn();
  } catch (e) {
    if (e instanceof SpecErrors) return { messages: e.errors.map((x) => x.message), errors: e.errors };
    if (e instanceof SpecError) return { messages: [e.message], errors: [e] };
    const what = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    throw new Error(`expected a SpecError, but it threw a plain ${what.slice(0, 400)}`, { cause: e });
  }
  throw new Error(`expected a SpecError, but the input was accepted: ${show(result)}`);
}

function show(v: unknown): string {
  try {
    return (JSON.stringify(v) ?? String(v)).slice(0, 400);
  } catch {
    return String(v).slice(0, 400);
  }
}

/** The messages of the rejection, after checking that every error names `file`, a line and a column. */
export function rejected(fn: () => unknown, file?: string): string[] {
  const r = rejection(fn);
  for (const e of r.errors) {
    if (file !== undefined) expect(e.file).toBe(file);
    expect(e.line).toBeGreaterThanOrEqual(1);
    expect(e.col).toBeGreaterThanOrEqual(1);
    // A message is one line: nothing the operator wrote may break it or reach the terminal raw.
    expect(e.message.replace(/\t/g, " ")).not.toMatch(/[\p{Cc}\p{Cf}]/u);
  }
  return r.messages;
}

/** Shell metacharacters, line breaks and invisible characters: [title, text, as a message shows it]. */
export const PAYLOADS: ReadonlyArray<readonly [title: string, text: string, shown: string]> = [
  ["command substitution", "a$(id)", "a$(id)"],
  ["backticks", "a`id`", "a`id`"],
  ["a semicolon", "a;id", "a;id"],
  ["&&", "a&&id", "a&&id"],
  ["a pipe", "a|id", "a|id"],
  ["a newline", "a\nid", "a\\u000Aid"],
  ["a carriage return", "a\rid", "a\\u000Did"],
  ["NUL", "a\u0000id", "a\\u0000id"],
  ["a single quote", "a'id", "a'id"],
  ["a double quote", 'a"id', 'a"id'],
  ["${IFS}", "a${IFS}id", "a${IFS}id"],
  ["a glob", "a*", "a*"],
  ["a space", "a id", "a id"],
  ["an ESC sequence", "a\u001b[2Jid", "a\\u001B[2Jid"],
  ["a right-to-left override", "a\u202eid", "a\\u202Eid"],
];

/** The payloads that break a line or hide from the plan: refused even in free text (args, hooks). */
export const LINE_BREAKERS = PAYLOADS.filter(([, text]) => /[\p{Cc}\p{Cf}]/u.test(text));

/** Escapes every control, DEL and format character as \uXXXX (valid in TOML, YAML and JSON strings). */
function escapeUnseen(s: string): string {
  return s.replace(/[\p{Cc}\p{Cf}]/gu, (c) => `\\u${(c.codePointAt(0) ?? 0).toString(16).padStart(4, "0")}`);
}

/** A TOML basic string holding exactly `s`. */
export function tomlStr(s: string): string {
  return `"${escapeUnseen(s.replace(/\\/g, "\\\\").replace(/"/g, '\\"'))}"`;
}

/** A YAML double-quoted scalar holding exactly `s`. */
export function yamlStr(s: string): string {
  return tomlStr(s);
}

/** Directories made by tempDir, removed by cleanTemp (afterAll). */
const temps: string[] = [];

export function tempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), `sm121-hostile-${prefix}-`));
  temps.push(d);
  return d;
}

export function cleanTemp(): void {
  for (const d of temps.splice(0)) rmSync(d, { recursive: true, force: true });
}

/** A copy of corpus/project with `files` (relative path -> content) written over it. */
export function tempProject(files: Record<string, string | Uint8Array> = {}): string {
  const root = tempDir("project");
  cpSync(join(CORPUS, "project"), root, { recursive: true });
  for (const [rel, content] of Object.entries(files)) {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), content);
  }
  return root;
}

/** The bytes of a corpus file. */
export function corpusFile(rel: string): Buffer {
  return readFileSync(join(CORPUS, rel));
}

/** `bash -n`: does bash parse the script? Returns bash's complaint, or "" when it parses. */
export function bashSyntax(script: string): string {
  const r = spawnSync("bash", ["-n"], { input: script, encoding: "utf8" });
  return r.status === 0 ? "" : r.stderr;
}

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
  /** The argv of every recorded call (docker, git, the fake engine), in order. */
  calls: string[][];
}

/**
 * Runs `script` with bash in `dir`, with fake programs first on PATH: each records its argv
 * (NUL-separated, so any byte survives) and succeeds. `names` are the programs to fake.
 */
export function runWithFakes(script: string, names: string[], dir = tempDir("run")): Run {
  const bin = join(dir, "fake-bin");
  const log = join(dir, "calls");
  mkdirSync(bin, { recursive: true });
  mkdirSync(log, { recursive: true });
  const fake =
    `#!/usr/bin/env bash\nn=$(ls ${JSON.stringify(log)} | wc -l)\n` +
    `printf '%s\\0' "$(basename "$0")" "$@" > ${JSON.stringify(log)}/$(printf %05d "$n")\n`;
  for (const n of names) {
    writeFileSync(join(bin, n), fake);
    chmodSync(join(bin, n), 0o755);
  }
  const r = spawnSync("bash", ["-c", script], {
    cwd: dir,
    encoding: "utf8",
    env: { PATH: `${bin}:${process.env["PATH"] ?? "/usr/bin:/bin"}`, HOME: dir, LANG: "C.UTF-8" },
  });
  const calls = readdirSync(log)
    .sort()
    .map((f) => readFileSync(join(log, f), "utf8").split("\0").slice(0, -1));
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, calls };
}
