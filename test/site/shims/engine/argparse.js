"use strict";
// CPython argparse (3.11 to 3.13.0, Lib/argparse.py) over the option tables that
// scripts/engine-options/extract.py took from the installed engines: the same
// spellings, abbreviations, nargs and choices, and argparse's own messages, in
// argparse's order (an ambiguous option while scanning; a missing value, a bad
// type or choice as each option is consumed; then required options; then
// "unrecognized arguments" for everything left over). The test site copies the
// tables next to this file (site.ts); from the repository they are read in place.
const fs = require("node:fs");
const path = require("node:path");

class ArgError extends Error {}

const TABLE_DIRS = [
  path.join(__dirname, "options"),
  path.resolve(__dirname, "..", "..", "..", "..", "src", "engines", "options"),
];

/** A table file's version as numbers, for the newest: vllm-0.33.0.json -> [0, 33, 0]. */
const versionOf = (file) =>
  file
    .replace(/^[a-z]+-|\.json$/g, "")
    .split(".")
    .map((x) => Number.parseInt(x, 10) || 0);
const newer = (a, b) => {
  for (let i = 0; i < 3; i++) if ((a[i] || 0) !== (b[i] || 0)) return (a[i] || 0) > (b[i] || 0);
  return false;
};

/**
 * The JSON file of `engine` (vllm, sglang) in the first of `dirs` that has one: the version the
 * test site's SM121_SIM_<ENGINE>_VERSION names (the conformance test holds the fake to the real
 * engine of that version), else the newest (sm121 keeps one file per version).
 */
function versionedFile(dirs, engine) {
  const want = process.env[`SM121_SIM_${engine.toUpperCase()}_VERSION`];
  for (const dir of dirs) {
    if (!fs.existsSync(dir)) continue;
    const files = fs.readdirSync(dir).filter((f) => f.startsWith(`${engine}-`) && f.endsWith(".json"));
    const file = want
      ? files.find((f) => f === `${engine}-${want}.json`)
      : files.reduce((best, f) => (best === undefined || newer(versionOf(f), versionOf(best)) ? f : best), undefined);
    if (file) return path.join(dir, file);
  }
  return null;
}

/** The option table of `engine` (vllm, sglang): see versionedFile. */
function loadTable(engine) {
  const file = versionedFile(TABLE_DIRS, engine);
  if (file) return JSON.parse(fs.readFileSync(file, "utf8"));
  throw new Error(`fake-engine: no option table for ${engine} in ${TABLE_DIRS.join(" or ")}`);
}

const NEGATIVE_NUMBER = /^-\d+$|^-\d*\.\d+$/;

function index(table) {
  if (table._index) return table._index;
  const bySpelling = new Map();
  for (const o of table.options) for (const s of o.spellings) bySpelling.set(s, o);
  const negativeLike = [...bySpelling.keys()].some((s) => NEGATIVE_NUMBER.test(s));
  Object.defineProperty(table, "_index", { value: { bySpelling, negativeLike }, enumerable: false });
  return table._index;
}

/** argparse's _parse_optional: null for an argument ("A"), else the option it selects. */
function parseOptional(table, arg) {
  const { bySpelling, negativeLike } = index(table);
  if (!arg || !table.prefixChars.includes(arg[0])) return null;
  if (bySpelling.has(arg)) return { option: bySpelling.get(arg), spelling: arg, explicit: undefined };
  if (arg.length === 1) return null;
  const eq = arg.indexOf("=");
  if (eq >= 0 && bySpelling.has(arg.slice(0, eq)))
    return { option: bySpelling.get(arg.slice(0, eq)), spelling: arg.slice(0, eq), explicit: arg.slice(eq + 1) };
  const tuples = optionTuples(table, arg);
  if (tuples.length > 1)
    throw new ArgError(
      `ambiguous option: ${eq >= 0 ? arg.slice(0, eq) : arg} could match ${tuples.map((t) => t.spelling).join(", ")}`,
    );
  if (tuples.length === 1) return tuples[0];
  if (NEGATIVE_NUMBER.test(arg) && !negativeLike) return null;
  if (arg.includes(" ")) return null;
  return { option: null, spelling: arg, explicit: undefined };
}

/** argparse's _get_option_tuples: abbreviations, and single-dash options with glued values. */
function optionTuples(table, arg) {
  const { bySpelling } = index(table);
  const out = [];
  if (table.prefixChars.includes(arg[1])) {
    if (!table.allowAbbrev) return out;
    const eq = arg.indexOf("=");
    const prefix = eq >= 0 ? arg.slice(0, eq) : arg;
    const explicit = eq >= 0 ? arg.slice(eq + 1) : undefined;
    for (const [s, o] of bySpelling) if (s.startsWith(prefix)) out.push({ option: o, spelling: s, explicit });
    return out;
  }
  const short = arg.slice(0, 2);
  for (const [s, o] of bySpelling) {
    if (s === short) out.push({ option: o, spelling: s, explicit: arg.slice(2) });
    else if (s.startsWith(arg)) out.push({ option: o, spelling: s, explicit: undefined });
  }
  return out;
}

const PY_INT = /^\s*[-+]?\d+(_\d+)*\s*$/;
const PY_FLOAT = /^\s*[-+]?((\d+(_\d+)*)?\.?\d+(_\d+)*([eE][-+]?\d+)?|inf|infinity|nan)\s*$/i;

/** vLLM's human_readable_int (vllm/utils/argparse_utils.py): 25.6k, 1K, 80g, or a plain int. */
function humanInt(raw, auto) {
  const s = raw.trim();
  if (auto && (s === "-1" || s.toLowerCase() === "auto")) return -1;
  const m = /^(\d+(?:\.\d+)?)([kKmMgGtT])$/.exec(s);
  if (m) {
    const dec = { k: 1e3, m: 1e6, g: 1e9, t: 1e12 }[m[2]];
    if (dec) return Math.trunc(Number(m[1]) * dec);
    if (m[1].includes(".")) return null;
    return Number(m[1]) * 2 ** (10 * " KMGT".indexOf(m[2]));
  }
  return PY_INT.test(s) ? Number(s.replace(/_/g, "")) : null;
}

/** The value types argparse calls that the fake engine knows; any other type accepts the string. */
function convert(o, raw) {
  const bad = () => new ArgError(`argument ${o.name}: invalid ${o.type} value: '${raw}'`);
  let v = raw;
  if (o.type === "int") {
    if (!PY_INT.test(raw)) throw bad();
    v = Number(raw.replace(/_/g, ""));
  } else if (o.type === "human_readable_int" || o.type === "human_readable_int_or_auto") {
    v = humanInt(raw, o.type.endsWith("auto"));
    if (v === null) throw bad();
  } else if (o.type === "float") {
    if (!PY_FLOAT.test(raw) && !/^\s*[-+]?\d+\.\s*$/.test(raw)) throw bad();
    v = Number(raw.replace(/_/g, ""));
  }
  if (o.choices && !o.choices.includes(String(raw))) {
    throw new ArgError(
      `argument ${o.name}: invalid choice: '${raw}' (choose from ${o.choices.map((c) => `'${c}'`).join(", ")})`,
    );
  }
  return v;
}

/** The value a flag (nargs 0) stores for the spelling used. */
function flagValue(o, spelling) {
  if (o.action === "_StoreFalseAction") return false;
  if (o.action === "BooleanOptionalAction" || o.action === "EnableDisableAction") {
    if (spelling.startsWith("--no-")) return false;
    const first = o.name.split("/")[0];
    const flip = { "--enable-": "--disable-", "--disable-": "--enable-" };
    return !Object.entries(flip).some(([p, q]) => first.startsWith(p) && spelling.startsWith(q));
  }
  return true;
}

const expected = (n) =>
  n === 1 || n === undefined
    ? "expected one argument"
    : n === "+"
      ? "expected at least one argument"
      : `expected ${n} arguments`;

/**
 * Parses argv as argparse's parse_args would with this table. Returns
 * { values: {dest: value}, given: Set<dest>, positionals: [] }, or throws ArgError
 * with argparse's message.
 */
function parseArgs(table, argv) {
  const kinds = [];
  const parsed = [];
  let rest = false;
  for (const a of argv) {
    if (rest) {
      kinds.push("A");
      parsed.push(null);
    } else if (a === "--") {
      kinds.push("-");
      parsed.push(null);
      rest = true;
    } else {
      const p = parseOptional(table, a);
      kinds.push(p ? "O" : "A");
      parsed.push(p);
    }
  }
  const values = {};
  const given = new Set();
  const extras = [];
  const positionals = [];
  for (let i = 0; i < argv.length; i++) {
    if (kinds[i] === "-") continue;
    if (kinds[i] === "A") {
      positionals.push(argv[i]);
      continue;
    }
    const p = parsed[i];
    if (!p.option) {
      extras.push(argv[i]);
      continue;
    }
    const o = p.option;
    given.add(o.dest);
    if (o.nargs === 0) {
      if (p.explicit !== undefined) throw new ArgError(`argument ${o.name}: ignored explicit argument '${p.explicit}'`);
      values[o.dest] = flagValue(o, p.spelling);
      continue;
    }
    let vals;
    if (p.explicit !== undefined) vals = [p.explicit];
    else {
      vals = [];
      const max = typeof o.nargs === "number" ? o.nargs : o.nargs === "?" ? 1 : Infinity;
      if (o.nargs === "...") while (i + 1 < argv.length) vals.push(argv[++i]);
      else while (vals.length < max && i + 1 < argv.length && kinds[i + 1] === "A") vals.push(argv[++i]);
    }
    const min = typeof o.nargs === "number" ? o.nargs : o.nargs === "+" ? 1 : 0;
    if (vals.length < min) throw new ArgError(`argument ${o.name}: ${expected(o.nargs)}`);
    const converted = vals.map((v) => convert(o, v));
    const one = o.nargs === 1 || o.nargs === "?";
    if (o.action === "_AppendAction") values[o.dest] = [...(values[o.dest] || []), ...converted];
    else values[o.dest] = one ? converted[0] : converted;
  }
  const posSpecs = table.positionals || [];
  let k = 0;
  for (const p of posSpecs) {
    if (p.nargs === "?" || p.nargs === 1) {
      if (k < positionals.length) values[p.dest] = positionals[k++];
    } else if (p.nargs === "*" || p.nargs === "+") {
      values[p.dest] = positionals.slice(k);
      k = positionals.length;
    }
  }
  const missing = [
    ...posSpecs.filter((p) => p.required && values[p.dest] === undefined).map((p) => p.dest),
    ...table.options.filter((o) => o.required && !given.has(o.dest)).map((o) => o.name),
  ];
  if (missing.length > 0) throw new ArgError(`the following arguments are required: ${missing.join(", ")}`);
  extras.push(...positionals.slice(k));
  if (extras.length > 0) throw new ArgError(`unrecognized arguments: ${extras.join(" ")}`);
  return { values, given };
}

module.exports = { parseArgs, ArgError, loadTable, parseOptional, versionedFile };
