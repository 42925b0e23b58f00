/** Turning zod issues into SpecErrors with a place in the file, a field, a problem and a fix. */
import { z } from "zod";
import { MAX_ERRORS, SpecError } from "./errors";
import { didYouMean, dotted, type FieldPath, type Place, type Position } from "./locate";

/**
 * Messages written in schemas as "problem; fix" keep their fix. zod's own messages get a fix
 * derived from the issue.
 */
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
        problem: "unknown key",
        fix: guess === undefined ? `remove it (known keys: ${knownKeys(path).join(", ")})` : `did you mean ${guess}?`,
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
    if (at instanceof z.ZodOptional || at instanceof z.ZodDefault || at instanceof z.ZodNullable) at = at.unwrap() as z.ZodType;
    else if (at instanceof z.ZodPipe) at = (at.out instanceof z.ZodTransform ? at.in : at.out) as z.ZodType;
    else return at;
  }
}

function childOf(s: z.ZodType, step: string | number): z.ZodType | undefined {
  if (s instanceof z.ZodObject) return typeof step === "string" && Object.hasOwn(s.shape, step) ? (s.shape[step] as z.ZodType) : undefined;
  if (s instanceof z.ZodRecord) return s.valueType as z.ZodType;
  if (s instanceof z.ZodArray) return s.element as z.ZodType;
  return undefined;
}

function splitMessage(issue: z.core.$ZodIssue | z.core.$ZodRawIssue): [string, string] {
  const msg = issue.message ?? "";
  const cut = msg.indexOf("; ");
  if (cut > 0) return [msg.slice(0, cut), msg.slice(cut + 2)];
  switch (issue.code) {
    case "invalid_type":
      if (/received undefined/.test(msg)) return ["is required", `add it (${issue.expected})`];
      return [`expected ${issue.expected}${receivedOf(msg)}`, `write ${/^[aeiou]/.test(issue.expected) ? "an" : "a"} ${issue.expected}`];
    case "invalid_value":
      return [`${describe(issue.input)} is not allowed`, `use one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`];
    case "too_small":
      return [msg, issue.inclusive === false ? `use a number above ${String(issue.minimum)}` : `use at least ${String(issue.minimum)}`];
    case "too_big":
      return [msg, `use at most ${String(issue.maximum)}`];
    case "invalid_format":
      return [msg, "fix the value to match the format"];
    default:
      return [msg, "fix the value"];
  }
}

function receivedOf(msg: string): string {
  const m = /received (\w+)/.exec(msg);
  return m === null ? "" : `, got ${m[1] ?? ""}`;
}

function describe(v: unknown): string {
  if (typeof v === "string") return JSON.stringify(v.length > 60 ? `${v.slice(0, 57)}...` : v);
  if (Array.isArray(v)) return "an array";
  if (v === null) return "null";
  if (typeof v === "object") return "a table";
  if (typeof v === "number" || typeof v === "boolean" || typeof v === "bigint") return String(v);
  return typeof v;
}
