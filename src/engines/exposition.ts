/**
 * Prometheus' text exposition format (version 0.0.4), read as Prometheus reads it
 * (model/textparse/promparse.go and promlex.l): blank lines; `# HELP name text` and
 * `# TYPE name type` (counter, gauge, histogram, summary, untyped); any other `#` line a comment;
 * samples `name{label="value",...} value [timestamp]`, with blanks between the parts, a trailing
 * comma in the braces, a quoted name inside them (`{"name.with.dots",label="x"}`), label values
 * with the escapes `\\`, `\"` and `\n`, a value as Go's ParseFloat reads it (exponents, `NaN`,
 * `+Inf`, `-Inf`, `Infinity`, in any case; no `_`, no hex, nothing out of range) and a timestamp
 * in milliseconds. A line that is none of these is an error, and Prometheus fails the whole scrape
 * for it: so does this parser.
 *
 * What sm121 reads of it is one signal at a time (seriesSum): the sum of a series over its label
 * sets, unknown where a value is no finite number (NaN, an infinite counter).
 */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
  timestampMs?: number;
}

export type Exposition = { ok: true; samples: Sample[] } | { ok: false; line: number; error: string };

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const QUOTED = /^"((?:\\.|[^\\"])*)"/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);
/** Go's strconv.ParseFloat, less what Prometheus refuses in a value (`_`, `p`: hex floats). */
const FLOAT = /^(?:[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?)|nan)$/i;

/** A label value or quoted name without its quotes: `\\`, `\"` and `\n` unescaped, any other `\x` kept. */
const unescape = (s: string) => s.replace(/\\(["\\n])/g, (_, c: string) => (c === "n" ? "\n" : c));

function parseValue(text: string): number | undefined {
  if (!FLOAT.test(text)) return undefined;
  const t = text.toLowerCase().replace(/^\+/, "");
  if (t === "nan") return NaN;
  if (/^-?inf(inity)?$/.test(t)) return t.startsWith("-") ? -Infinity : Infinity;
  const v = Number(t);
  // Out of range: ParseFloat's ErrRange, which fails the scrape.
  return Number.isFinite(v) ? v : undefined;
}

type Line = { kind: "sample"; sample: Sample } | { kind: "meta" } | { error: string };

/** The part of a sample between its braces, `rest` starting after `{`. */
function parseBraces(
  rest: string,
  named: string | undefined,
): { name?: string; labels: Record<string, string>; rest: string } | string {
  const labels: Record<string, string> = {};
  let name = named;
  let r = rest.trimStart();
  for (;;) {
    if (r.startsWith("}")) return { ...(name !== undefined && { name }), labels, rest: r.slice(1) };
    const q = QUOTED.exec(r);
    const l = q === null ? LABEL.exec(r) : null;
    if (q === null && l === null) return "expected label name";
    const key = q !== null ? unescape(q[1] ?? "") : (l?.[0] ?? "");
    r = r.slice((q ?? l)?.[0].length ?? 0).trimStart();
    // A quoted string followed by a comma or the closing brace is the metric's name.
    if (q !== null && (r.startsWith(",") || r.startsWith("}"))) {
      if (name !== undefined) return "metric name already set";
      name = key;
    } else {
      if (!r.startsWith("=")) return "expected equal";
      r = r.slice(1).trimStart();
      const v = QUOTED.exec(r);
      if (v === null) return "expected label value";
      labels[key] = unescape(v[1] ?? "");
      r = r.slice(v[0].length).trimStart();
    }
    if (r.startsWith(",")) r = r.slice(1).trimStart();
  }
}

function parseSample(line: string): Line {
  let name: string | undefined;
  let rest = line;
  const n = NAME.exec(rest);
  if (n !== null) {
    name = n[0];
    rest = rest.slice(name.length).trimStart();
  } else if (!rest.startsWith("{")) return { error: "expected a valid start token" };
  let labels: Record<string, string> = {};
  if (rest.startsWith("{")) {
    const b = parseBraces(rest.slice(1), name);
    if (typeof b === "string") return { error: b };
    name = b.name;
    labels = b.labels;
    rest = b.rest.trimStart();
  }
  if (name === undefined) return { error: "metric name not set" };
  const [valueText = "", ts, more] = rest.split(/[ \t]+/).filter((p) => p !== "");
  if (valueText === "" || valueText.includes("{")) return { error: "expected value after metric" };
  const value = parseValue(valueText);
  if (value === undefined) return { error: `unparsable value ${JSON.stringify(valueText)}` };
  if (more !== undefined || (ts !== undefined && !/^\d+$/.test(ts)))
    return { error: "expected timestamp or new record" };
  const timestampMs = ts === undefined ? undefined : Number(ts);
  return { kind: "sample", sample: { name, labels, value, ...(timestampMs !== undefined && { timestampMs }) } };
}

function parseLine(raw: string): Line | undefined {
  const line = raw.replace(/^[ \t]+/, "");
  if (line === "") return undefined;
  if (!line.startsWith("#")) return parseSample(line);
  const meta = /^#[ \t]+(HELP|TYPE)[ \t]+(.*)$/.exec(line);
  if (meta === null) return { kind: "meta" };
  const name = NAME.exec(meta[2] ?? "")?.[0] ?? QUOTED.exec(meta[2] ?? "")?.[0];
  if (name === undefined) return { error: `expected metric name after ${meta[1] ?? ""}` };
  const text = (meta[2] ?? "").slice(name.length + 1);
  if (meta[1] === "TYPE" && !TYPES.has(text)) return { error: `invalid metric type ${JSON.stringify(text)}` };
  return { kind: "meta" };
}

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const lines = text.split("\n");
  for (const [i, raw] of lines.entries()) {
    const l = parseLine(raw);
    if (l === undefined) continue;
    if ("error" in l) return { ok: false, line: i + 1, error: l.error };
    if (l.kind === "sample") samples.push(l.sample);
  }
  return { ok: true, samples };
}

/**
 * One signal from an exposition: the sum of the series `name` over the label sets `keep` keeps.
 * "absent" where no sample has that name; "unknown" where the exposition does not parse or a
 * value is no finite number (NaN, +Inf, -Inf).
 */
export function seriesSum(
  e: Exposition,
  name: string,
  keep: (labels: Readonly<Record<string, string>>) => boolean = () => true,
): number | "absent" | "unknown" {
  if (!e.ok) return "unknown";
  const values = e.samples.filter((s) => s.name === name && keep(s.labels)).map((s) => s.value);
  if (values.length === 0) return "absent";
  return values.every(Number.isFinite) ? values.reduce((a, b) => a + b, 0) : "unknown";
}
