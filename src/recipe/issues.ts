/** Turning zod issues into SpecErrors with a place in the file, a field, a problem and a fix. */
import { z } from "zod";
import { msg, type Msg } from "../text/messages";
import { MAX_ERRORS, SpecError } from "./errors";
import { didYouMean, dotted, type FieldPath, type Place, type Position } from "./locate";

/**
 * A schema's own message: its problem and its fix as messages (keys and arguments), carried through
 * zod's message string (zod passes a check's message on as a string) and read back by
 * issueToSpecError. The mark keeps it apart from zod's own messages.
 */
export function zodMsg(problem: Msg, fix: Msg): string {
  return MARK + JSON.stringify({ problem, fix });
}

const MARK = "\u0000sm121-msg:";

/** The problem and fix zodMsg wrote, or undefined for a message of zod's own. */
function ownMessage(message: string): { problem: Msg; fix: Msg } | undefined {
  if (!message.startsWith(MARK)) return undefined;
  const v: unknown = JSON.parse(message.slice(MARK.length));
  if (typeof v === "object" && v !== null && "problem" in v && "fix" in v) return v as { problem: Msg; fix: Msg };
  throw new Error(`unreachable: a zodMsg without a problem and a fix: ${message}`);
}

/** Schemas' messages (zodMsg) keep their fix. zod's own messages get a problem and a fix from the issue. */
export function issueToSpecError(
  issue: z.core.$ZodIssue,
  file: string,
  /** A Place names another file than `file` (the site's values come from several files). */
  locate: (path: FieldPath) => Position | Place,
  knownKeys: (path: FieldPath) => readonly string[],
  fieldPrefix = "",
): SpecError[] {
  const path = issue.path.filter((p): p is string | number => typeof p !== "symbol");
  if (issue.code === "unrecognized_keys") {
    return issue.keys.slice(0, MAX_ERRORS + 1).map((key) => {
      const at = locate([...path, key]);
      const guess = didYouMean(key, knownKeys(path));
      return new SpecError({
        file,
        ...at,
        field: fieldPrefix + dotted([...path, key]),
        problem: msg("spec.unknownKey"),
        fix:
          guess === undefined
            ? msg("spec.unknownKeyFix", { keys: knownKeys(path).join(", ") })
            : msg("spec.didYouMean", { guess }),
      });
    });
  }
  const at = locate(path);
  // A bad record key: the key schema's own message says what is wrong.
  const inner = issue.code === "invalid_key" ? issue.issues[0] : undefined;
  const [problem, fix] = splitMessage(inner ?? issue);
  return [new SpecError({ file, ...at, field: fieldPrefix + dotted(path), problem, fix })];
}

/**
 * The keys that the schema accepts at `path` (an object inside records, arrays, defaults and
 * pipes), in the schema's order: the "known keys" of an unknown-key error come from the schema
 * itself, never from a list written beside it.
 */
export function keysAt(schema: z.ZodType, path: FieldPath): string[] {
  let at: z.ZodType | undefined = schema;
  for (const step of path) at = at === undefined ? undefined : childOf(unwrap(at), step);
  const inner = at === undefined ? undefined : unwrap(at);
  return inner instanceof z.ZodObject ? Object.keys(inner.shape) : [];
}

/** The schema that validates the value: through optional, default and pipes (a transform's input). */
function unwrap(s: z.ZodType): z.ZodType {
  let at = s;
  for (;;) {
    if (at instanceof z.ZodOptional || at instanceof z.ZodDefault || at instanceof z.ZodNullable)
      at = at.unwrap() as z.ZodType;
    else if (at instanceof z.ZodPipe) at = (at.out instanceof z.ZodTransform ? at.in : at.out) as z.ZodType;
    else return at;
  }
}

function childOf(s: z.ZodType, step: string | number): z.ZodType | undefined {
  if (s instanceof z.ZodObject)
    return typeof step === "string" && Object.hasOwn(s.shape, step) ? (s.shape[step] as z.ZodType) : undefined;
  if (s instanceof z.ZodRecord) return s.valueType as z.ZodType;
  if (s instanceof z.ZodArray) return s.element as z.ZodType;
  return undefined;
}

function splitMessage(issue: z.core.$ZodIssue | z.core.$ZodRawIssue): [Msg, Msg] {
  const own = ownMessage(issue.message ?? "");
  if (own !== undefined) return [own.problem, own.fix];
  switch (issue.code) {
    case "invalid_type": {
      const expected = { expected: issue.expected };
      // The parse reports its input (reportInput): a key that is missing has none.
      if (issue.input === undefined) return [msg("spec.required"), msg("spec.requiredFix", expected)];
      const fix = msg(/^[aeiou]/.test(issue.expected) ? "spec.expectedFixAn" : "spec.expectedFix", expected);
      return [msg("spec.expected", { ...expected, got: typeName(issue.input) }), fix];
    }
    case "invalid_value": {
      const values = issue.values.map((v) => JSON.stringify(v)).join(", ");
      return [msg("spec.notAllowed", { value: describe(issue.input) }), msg("spec.useOneOf", { values })];
    }
    case "too_small": {
      const minimum = { minimum: String(issue.minimum) };
      if (issue.origin === "array" || issue.origin === "string") {
        const problem = fewer(issue.origin === "array" ? "array" : "string", Number(issue.minimum));
        return [problem, msg("spec.atLeastFix", minimum)];
      }
      return issue.inclusive === false
        ? [msg("spec.notAbove", minimum), msg("spec.aboveFix", minimum)]
        : [msg("spec.tooSmall", minimum), msg("spec.atLeastFix", minimum)];
    }
    case "too_big":
      return [
        issue.origin === "array" || issue.origin === "string"
          ? msg(issue.origin === "array" ? "spec.tooManyItems" : "spec.tooLong", { count: Number(issue.maximum) })
          : msg("spec.tooBig", { maximum: String(issue.maximum) }),
        msg("spec.atMostFix", { maximum: String(issue.maximum) }),
      ];
    case "invalid_format":
      return [msg("spec.badFormat", { format: issue.format }), msg("spec.badFormatFix")];
    default:
      return [msg("spec.invalid"), msg("spec.fixValue")];
  }
}

/** A string or an array shorter than its minimum: empty, or fewer than so many. */
function fewer(origin: "array" | "string", minimum: number): Msg {
  if (minimum === 1) return msg("spec.empty");
  return msg(origin === "array" ? "spec.tooFewItems" : "spec.tooShort", { count: minimum });
}

/** The type of a value as zod names it in its messages (string, number, array, null, ...). */
function typeName(v: unknown): string {
  if (typeof v === "number") return Number.isNaN(v) ? "NaN" : Number.isFinite(v) ? "number" : "Infinity";
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  if (typeof v !== "object") return typeof v;
  // A class instance by its class (a TOML date, a YAML binary's Buffer), as zod names it.
  const proto: unknown = Object.getPrototypeOf(v);
  const own = proto === null || proto === Object.prototype;
  const ctor = own ? undefined : (v as { constructor?: { name?: unknown } }).constructor;
  return typeof ctor?.name === "string" && ctor.name !== "" ? ctor.name : "object";
}

function describe(v: unknown): string | Msg {
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (Array.isArray(v)) return msg("spec.anArray");
  if (v === null) return "null";
  if (typeof v === "object") return msg("spec.aTable");
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  return typeof v;
}
