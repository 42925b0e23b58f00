/**
 * Profiles: complete key sets for a script recipe's .env, in the strict bash subset of seed 001.
 *
 * A profile is not a list of changes: start.sh has built-in defaults that differ from .env.sample,
 * so a key missing from the file would silently change the server. The parser reports every error
 * of a file at once, each with file:line:col, the key or directive, the problem and the fix, and
 * never echoes the value of a secret.
 */
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { MAX_ERRORS, SpecError, throwIfAny } from "../recipe/errors";
import { pairsFromTokens, tokenizeLine } from "./dockerargs";
import { DirectiveName, ProfileDirective, readDirective } from "./directives";
import { isForbiddenKey, isMultilineKey, isNodeKey, KEY_PATTERN, NAME_PATTERN } from "./keys";
import { Span, valueFault, ValueForm } from "./values";
import { msg, type Msg } from "../text/messages";
import { OptionIndex } from "../engines/options/argparse";
import { VLLM_OPTIONS } from "../engines/options/table";

export { FORBIDDEN_KEYS, SECRET_KEYS } from "./keys";
export type { ProfileDirective } from "./directives";

export type ProfileStatus = "stable" | "experimental";

export interface ProfileDirectives {
  recipe: string;
  status: ProfileStatus;
  runnable: boolean;
  description: string;
  mkdirs: string[];
  proofs: string[];
  clients: string[];
}

export interface ProfileEntry {
  key: string;
  /** The value as written, without quotes; a multi-line value joined with single spaces. */
  value: string;
  line: number;
  col: number;
  /** Whether the value was in double quotes. */
  quoted: boolean;
  /** The value text of each physical line with its position, for `{{name}}` and pair messages. */
  segments: Span[];
}

export interface Profile {
  name: string;
  file: string;
  directives: ProfileDirectives;
  entries: ProfileEntry[];
  /** Every directive line as written, in file order (positions for later messages). */
  directiveList: ProfileDirective[];
}

/** Parses a profile; `file` names it in messages and its stem is the profile name. */
export function parseProfile(file: string, text: string): Profile {
  const errors: SpecError[] = [];
  const fail = (line: number, col: number, field: string, problem: Msg, fix: Msg): void => {
    errors.push(new SpecError({ file, line, col, field, problem, fix }));
  };
  const name = path.basename(file).replace(/\.[^.]*$/, "");
  if (!NAME_PATTERN.test(name)) {
    fail(1, 1, "profile name", msg("spec.profile.name", { name }), msg("spec.profile.nameFix"));
  }
  const lines = text.split("\n");
  if (lines.length > 0 && lines[lines.length - 1] === "") lines.pop();
  if (lines[0]?.startsWith("\ufeff")) {
    fail(1, 1, "", msg("spec.profile.bom"), msg("spec.profile.bomFix"));
    lines[0] = lines[0].slice(1);
  }
  const directiveList: ProfileDirective[] = [];
  const entries: ProfileEntry[] = [];
  const firstLine = new Map<string, number>();
  for (let i = 0; i < lines.length; i++) {
    // A mangled or hostile file (100,000 bad lines) stops here; throwIfAny says there were more.
    if (errors.length > MAX_ERRORS) break;
    const lineText = lines[i] ?? "";
    const line = i + 1;
    const trimmed = lineText.trimStart();
    if (trimmed === "" || trimmed === "\r") continue;
    if (trimmed.startsWith("#")) {
      const col = lineText.length - trimmed.length + 1;
      const d = readDirective(file, { text: trimmed.trimEnd(), line, col }, directiveList, errors);
      if (d) directiveList.push(d);
      continue;
    }
    if (trimmed !== lineText) {
      fail(line, 1, "", msg("spec.profile.indented"), msg("spec.profile.indentedFix"));
      continue;
    }
    const read = readAssignment(file, lines, i, errors);
    i = read.last;
    if (read.entry === undefined) continue;
    const entry = read.entry;
    const first = firstLine.get(entry.key);
    if (first !== undefined) {
      fail(line, 1, entry.key, msg("spec.profile.twice", { line: first }), msg("spec.profile.twiceFix"));
      continue;
    }
    firstLine.set(entry.key, line);
    if (checkKey(file, entry, errors)) entries.push(entry);
  }
  const directives = collectDirectives(directiveList);
  if (!directiveList.some((d) => d.name === "recipe")) {
    fail(1, 1, "directive sm121-recipe", msg("spec.profile.missing"), msg("spec.profile.noRecipeFix"));
  }
  throwIfAny(errors);
  return { name, file, directives, entries, directiveList };
}

/** Reads a file from disk and parses it; `displayPath` names it in messages (default: `path`). */
export function readProfileFile(filePath: string, displayPath?: string): Profile {
  const shown = displayPath ?? filePath;
  let text: string;
  try {
    text = readFileSync(filePath, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? "read error";
    throw new SpecError({
      file: shown,
      line: 1,
      col: 1,
      field: "",
      problem: msg("spec.profile.unreadable", { code }),
      fix: msg("spec.profile.unreadableFix"),
    });
  }
  return parseProfile(shown, text);
}

function collectDirectives(list: ProfileDirective[]): ProfileDirectives {
  const one = (n: DirectiveName): string | undefined => list.find((d) => d.name === n)?.value;
  const all = (n: DirectiveName): string[] => list.filter((d) => d.name === n).map((d) => d.value);
  return {
    recipe: one("recipe") ?? "",
    status: one("status") === "experimental" ? "experimental" : "stable",
    runnable: one("runnable") !== "false",
    description: one("description") ?? "",
    mkdirs: all("mkdir"),
    proofs: all("proof"),
    clients: all("client"),
  };
}

/** Reads `KEY=value` starting at lines[start]; a quoted multi-line value consumes more lines. */
function readAssignment(
  file: string,
  lines: string[],
  start: number,
  errors: SpecError[],
): { entry?: ProfileEntry; last: number } {
  const lineText = lines[start] ?? "";
  const line = start + 1;
  const fail = (col: number, field: string, problem: Msg, fix: Msg): { last: number } => {
    errors.push(new SpecError({ file, line, col, field, problem, fix }));
    return { last: start };
  };
  const eq = lineText.indexOf("=");
  if (eq < 0) return fail(1, "", msg("spec.profile.notKeyValue"), msg("spec.profile.notKeyValueFix"));
  const key = lineText.slice(0, eq);
  if (!KEY_PATTERN.test(key)) return fail(1, key.trim(), msg("spec.profile.notKey"), keyFix(key));
  const rest = lineText.slice(eq + 1);
  const valueCol = eq + 2;
  if (rest.startsWith("'")) {
    return fail(valueCol, key, msg("spec.profile.singleQuotes"), msg("spec.profile.singleQuotesFix"));
  }
  if (!rest.startsWith('"')) {
    return {
      entry: { key, value: rest, line, col: 1, quoted: false, segments: [{ text: rest, line, col: valueCol }] },
      last: start,
    };
  }
  const close = rest.indexOf('"', 1);
  if (close >= 0) {
    const after = rest.slice(close + 1);
    if (after.trim() !== "") {
      return fail(
        valueCol + close + 1 + leading(after),
        key,
        msg("spec.profile.afterQuote"),
        msg("spec.profile.afterQuoteFix"),
      );
    }
    const segments = [{ text: rest.slice(1, close), line, col: valueCol + 1 }];
    return { entry: { key, value: rest.slice(1, close), line, col: 1, quoted: true, segments }, last: start };
  }
  if (!isMultilineKey(key)) {
    return fail(valueCol, key, msg("spec.profile.unclosedLine"), msg("spec.profile.unclosedLineFix"));
  }
  const segments: Span[] = [{ text: rest.slice(1), line, col: valueCol + 1 }];
  for (let j = start + 1; j < lines.length; j++) {
    const text = lines[j] ?? "";
    const q = text.indexOf('"');
    if (q < 0) {
      segments.push({ text, line: j + 1, col: 1 });
      continue;
    }
    segments.push({ text: text.slice(0, q), line: j + 1, col: 1 });
    if (text.slice(q + 1).trim() !== "") {
      errors.push(
        new SpecError({
          file,
          line: j + 1,
          col: q + 2 + leading(text.slice(q + 1)),
          field: key,
          problem: msg("spec.profile.afterQuote"),
          fix: msg("spec.profile.afterQuoteFix"),
        }),
      );
      return { last: j };
    }
    const value = segments
      .flatMap((s) => s.text.split(/[ \t]+/))
      .filter((w) => w !== "")
      .join(" ");
    return { entry: { key, value, line, col: 1, quoted: true, segments }, last: j };
  }
  errors.push(
    new SpecError({
      file,
      line,
      col: valueCol,
      field: key,
      problem: msg("spec.profile.unclosed"),
      fix: msg("spec.profile.unclosedFix"),
    }),
  );
  return { last: lines.length - 1 };
}

function leading(text: string): number {
  return text.length - text.trimStart().length;
}

function keyFix(key: string): Msg {
  if (/^export\s/.test(key)) return msg("spec.profile.exportFix");
  if (/\s$/.test(key) || /^\S+\s/.test(key)) return msg("spec.profile.spaceFix");
  if (/[a-z]/.test(key)) return msg("spec.profile.upperFix");
  return msg("spec.profile.keyFix");
}

/** Checks the key's own rules and the value rules; returns whether the entry is usable. */
function checkKey(file: string, entry: ProfileEntry, errors: SpecError[]): boolean {
  const at = { file, line: entry.line, col: entry.col, field: entry.key };
  if (isForbiddenKey(entry.key)) {
    const fix =
      entry.key === "TP1_CONTAINER_NAME"
        ? msg("spec.profile.containerFix")
        : msg("spec.profile.secretFix", { key: entry.key });
    errors.push(new SpecError({ ...at, problem: msg("spec.profile.forbidden"), fix }));
    return false;
  }
  if (isNodeKey(entry.key)) {
    errors.push(new SpecError({ ...at, problem: msg("spec.profile.nodeKey"), fix: msg("spec.profile.nodeKeyFix") }));
    return false;
  }
  const form: ValueForm = entry.quoted ? "quoted" : "unquoted";
  for (const s of entry.segments) {
    const fault = valueFault(s.text, form);
    if (fault !== undefined) {
      errors.push(
        new SpecError({
          ...at,
          line: s.line,
          col: s.col + fault.index,
          problem: msg("spec.value.the", { problem: fault.problem }),
          fix: fault.fix,
        }),
      );
      return false;
    }
  }
  const tokens = entry.segments.flatMap((s) => tokenizeLine(s.text, s.line, s.col));
  const before = errors.length;
  if (entry.key === "EXTRA_DOCKER_ARGS") pairsFromTokens(file, entry.key, tokens, errors, true);
  if (entry.key === "EXTRA_VLLM_ARGS") checkVllmArgs(file, entry.key, tokens, errors);
  return errors.length === before;
}

/**
 * vLLM reads its key from API_KEY in the node .env (start.sh adds --api-key); never from a profile.
 * A token is the key's flag when vLLM's parser takes it so (its option table: `--api-key`,
 * `--api_key=...`, a unique prefix such as `--api-k`).
 */
export function checkVllmArgs(
  file: string,
  field: string,
  tokens: Span[],
  errors: SpecError[],
  substituted = false,
): void {
  const index = new OptionIndex(VLLM_OPTIONS);
  for (const t of tokens) {
    const c = index.classify(t.text);
    if (c.kind !== "option" || c.sel.option.dest !== "api_key") continue;
    errors.push(
      new SpecError({
        file,
        line: t.line,
        col: t.col,
        field,
        problem: msg(substituted ? "spec.profile.apiKeySubstituted" : "spec.profile.apiKey"),
        fix: msg("spec.profile.apiKeyFix"),
      }),
    );
  }
}
