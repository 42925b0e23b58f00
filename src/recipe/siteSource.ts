/**
 * Where the site's values come from, and where each one stands for an error message.
 *
 * Pulumi resolves a stack's configuration from several places: the stack file
 * `Pulumi.<stack>.yaml`, project-level `config:` defaults in `Pulumi.yaml`, ESC environments the
 * stack imports, or the file given with `--config-file`. The program (and the CLI, through the
 * Pulumi CLI) reads the site from that resolved configuration; an error points at the line of the
 * stack file or of Pulumi.yaml when the value there is the one in force, and names Pulumi's
 * configuration when the value came from elsewhere (an environment, --config-file). Without a
 * Pulumi CLI the CLI reads the stack file alone.
 */
import { LineCounter, parseDocument, visit } from "yaml";
import { SpecError } from "./errors";
import { msg, t } from "../text/messages";
import { yamlLocator, type FieldPath, type Place, type Position } from "./locate";

/** Config keys holding secrets; they are read through Pulumi, never as site values. */
export const SECRET_CONFIG_KEYS = ["hfToken", "apiKey", "sshPrivateKey", "sshPassphrase"] as const;

export interface SiteSource {
  /** The file named for the site as a whole: the stack file. */
  file: string;
  /** The sm121: keys without the prefix (secrets left out), with no prototype. */
  raw: Record<string, unknown>;
  /** The place of a field of the site (a path below the sm121: keys). */
  locate: (path: FieldPath) => Place;
}

/** A YAML file of Pulumi's (a stack file or Pulumi.yaml): its name and text. */
export interface ConfigDoc {
  file: string;
  text: string;
}

/** A site has nodes and deployments, not thousands: the YAML parser's time grows with the square of a map's size. */
const MAX_SITE_LINES = 10_000;
const MAX_SITE_BYTES = 1 << 20;

/** Where a value that is in neither the stack file nor Pulumi.yaml came from, in the reader's language. */
export function pulumiConfigOrigin(): string {
  return t("spec.site.pulumiConfig");
}

/** The `config:` map of a stack file's text; a SpecError for a file sm121 does not read. */
function configOf(doc: ConfigDoc): unknown {
  const { file, text } = doc;
  const lineCount = text.split("\n").length;
  if (lineCount > MAX_SITE_LINES || text.length > MAX_SITE_BYTES) {
    const size =
      lineCount > MAX_SITE_LINES
        ? msg("spec.site.sizeLines", { count: lineCount })
        : msg("spec.site.sizeMb", { size: (text.length / (1 << 20)).toFixed(1) });
    const problem = msg("spec.site.tooBig", { size, max: MAX_SITE_LINES });
    throw new SpecError({
      file,
      line: lineCount > MAX_SITE_LINES ? MAX_SITE_LINES + 1 : 1,
      col: 1,
      field: "",
      problem,
      fix: msg("spec.site.tooBigFix"),
    });
  }
  // prettyErrors: false leaves linePos unset, so the position comes from a LineCounter.
  const lines = new LineCounter();
  const parsed = parseDocument(text, { prettyErrors: false, lineCounter: lines });
  const yamlErr = parsed.errors[0];
  if (yamlErr !== undefined) {
    const at = lines.linePos(yamlErr.pos[0]);
    throw new SpecError({
      file,
      line: at.line,
      col: at.col,
      field: "",
      problem: msg("spec.yamlSyntax", { problem: yamlErr.message.split("\n")[0] ?? "" }),
      fix: msg("spec.syntaxFix"),
    });
  }
  let root: unknown;
  try {
    root = parsed.toJS({ maxAliasCount: 100 });
  } catch (e) {
    // yaml refuses an alias bomb ("billion laughs") here, with a plain error and no position.
    let at = 0;
    visit(parsed, {
      Alias: (_, n) => {
        at = n.range?.[0] ?? 0;
        return visit.BREAK;
      },
    });
    const pos = lines.linePos(at);
    throw new SpecError({
      file,
      line: pos.line,
      col: pos.col,
      field: "",
      problem: msg("spec.yaml", { problem: e instanceof Error ? e.message : String(e) }),
      fix: msg("spec.yamlAliasFix"),
    });
  }
  return typeof root === "object" && root !== null && "config" in root ? root.config : {};
}

/** The sm121: entries of a config map, without the prefix and the secrets, on a null prototype. */
function sm121Keys(config: unknown, value: (v: unknown) => unknown): Record<string, unknown> {
  // No prototype: a key `sm121:__proto__` must stay a key (and be reported as unknown).
  const raw = Object.create(null) as Record<string, unknown>;
  for (const [k, v] of Object.entries((config ?? {}) as Record<string, unknown>)) {
    if (!k.startsWith("sm121:")) continue;
    const key = k.slice("sm121:".length);
    if ((SECRET_CONFIG_KEYS as readonly string[]).includes(key)) continue;
    raw[key] = value(v);
  }
  return raw;
}

/** The site as the stack file alone holds it (the CLI without a Pulumi CLI). */
export function stackFileSource(doc: ConfigDoc): SiteSource {
  const raw = sm121Keys(configOf(doc), (v) => v);
  const locateIn = yamlLocator(doc.text);
  return { file: doc.file, raw, locate: (p) => ({ file: doc.file, ...locateIn(configPath(p)) }) };
}

const configPath = (p: FieldPath): FieldPath => {
  const [head, ...rest] = p;
  return head === undefined ? ["config"] : ["config", `sm121:${String(head)}`, ...rest];
};

/** A YAML file of Pulumi's as read to place errors: its sm121: keys and where each stands. */
interface ReadDoc {
  doc: ConfigDoc;
  config: Record<string, unknown>;
  locateIn: (path: FieldPath) => Position;
}

/** A stack file too large to read (or not YAML) is no place to point at; Pulumi read it already. */
function readable(d: ConfigDoc | undefined): ReadDoc | undefined {
  if (d === undefined) return undefined;
  try {
    return { doc: d, config: sm121Keys(configOf(d), (v) => v), locateIn: yamlLocator(d.text) };
  } catch (e) {
    if (e instanceof SpecError) return undefined;
    throw e;
  }
}

/** The stack file as read, and each file and form in which a value of the site can stand. */
interface Placed {
  stack: ReadDoc | undefined;
  places: Array<{ at: ReadDoc; infix: FieldPath }>;
}

function placesIn(docs: { stack?: ConfigDoc; project?: ConfigDoc }): Placed {
  const stack = readable(docs.stack);
  const project = readable(docs.project);
  // Project-level config is `sm121:key: value`, or `{value: ...}` / `{default: ...}` with a type.
  const places = [
    ...(stack === undefined ? [] : [{ at: stack, infix: [] }]),
    ...(project === undefined
      ? []
      : [
          { at: project, infix: ["value"] },
          { at: project, infix: ["default"] },
          { at: project, infix: [] },
        ]),
  ];
  return { stack, places };
}

/**
 * The site as Pulumi resolved it: `config` maps `sm121:<key>` to the string Pulumi hands a program
 * (objects and lists as JSON, scalars as text). `stack` and `project` are the stack file and
 * Pulumi.yaml when they exist, read only to place errors (and only when there is one).
 */
export function pulumiConfigSource(
  config: Readonly<Record<string, string>>,
  stackFile: string,
  docs: { stack?: ConfigDoc; project?: ConfigDoc },
): SiteSource {
  const raw = sm121Keys(config, (v) => parseConfigValue(String(v)));
  // The files are parsed on the first error only: a site without one never needs a position.
  let read: Placed | undefined;
  const locate = (p: FieldPath): Place => {
    const { stack, places } = (read ??= placesIn(docs));
    // The deepest part of the path that has a value, in the first file whose value is in force.
    for (let n = p.length; n > 0; n--) {
      const q = p.slice(0, n);
      const value = valueAt(raw, q);
      if (value === undefined) continue;
      const [head, ...rest] = q;
      for (const { at, infix } of places) {
        const there = valueAt(at.config, [head ?? "", ...infix, ...rest]);
        if (there !== undefined && same(there, value))
          return { file: at.doc.file, ...at.locateIn(["config", `sm121:${String(head)}`, ...infix, ...rest]) };
      }
      return { file: pulumiConfigOrigin(), line: 0, col: 0 };
    }
    return stack === undefined
      ? { file: pulumiConfigOrigin(), line: 0, col: 0 }
      : { file: stack.doc.file, ...stack.locateIn(["config"]) };
  };
  return { file: stackFile, raw, locate };
}

/** Pulumi hands a program objects and lists as JSON text; other values stay text. */
function parseConfigValue(s: string): unknown {
  if (!/^\s*[[{]/.test(s)) return s;
  try {
    return JSON.parse(s) as unknown;
  } catch {
    return s;
  }
}

function valueAt(v: unknown, path: FieldPath): unknown {
  let at = v;
  for (const p of path) {
    if (typeof at !== "object" || at === null || !Object.hasOwn(at, p)) return undefined;
    at = (at as Record<string | number, unknown>)[p];
  }
  return at;
}

const isMap = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** One value, whether written in YAML (30, true) or handed over by Pulumi as text ("30", "true"). */
function same(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => same(x, b[i]));
  if (isMap(a) || isMap(b)) {
    if (!isMap(a) || !isMap(b)) return false;
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && same(a[k], b[k]));
  }
  return String(a) === String(b);
}
