"use strict";
// Python argparse behaviour, enough to reproduce the engines' command-line errors:
// `--flag value` / `--flag=value`, store_true flags (no value allowed), nargs "+",
// type and choices errors raised at once, then "the following arguments are
// required", then "unrecognized arguments" for everything left over.

class ArgError extends Error {}

const isFlagLike = (t) => t.startsWith("-") && t !== "-" && !/^-\d+(\.\d+)?$/.test(t);

function convert(flag, name, raw) {
  const bad = (kind) => new ArgError(`argument ${flag.names.join("/")}: invalid ${kind} value: '${raw}'`);
  let v = raw;
  if (flag.type === "int") {
    if (!/^[-+]?\d+$/.test(raw)) throw bad("int");
    v = Number(raw);
  } else if (flag.type === "float") {
    if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw bad("float");
    v = Number(raw);
  } else if (flag.type === "json") {
    try {
      v = JSON.parse(raw);
    } catch {
      throw bad("loads");
    }
  } else if (flag.type === "jsonOrInt") {
    if (/^\d+$/.test(raw)) v = Number(raw);
    else {
      try {
        v = JSON.parse(raw);
      } catch {
        throw bad("loads");
      }
    }
  }
  if (flag.choices && !flag.choices.includes(v)) {
    throw new ArgError(`argument ${flag.names.join("/")}: invalid choice: '${raw}' (choose from ${flag.choices.map((c) => `'${c}'`).join(", ")})`);
  }
  if (flag.check) {
    const msg = flag.check(v);
    if (msg) throw new ArgError(`argument ${flag.names.join("/")}: ${msg}`);
  }
  return v;
}

/**
 * spec: { flags: [{ names, dest, type?: "str"|"int"|"float"|"bool"|"json"|"jsonOrInt", choices?, nargs?: "+", negatable?, required? }],
 *         positionals: [{ dest, required }], underscores?: boolean }
 * Returns { values, given: Set<dest> } or throws ArgError.
 */
function parseArgs(spec, argv) {
  const byName = new Map();
  for (const f of spec.flags) for (const n of f.names) byName.set(n, f);
  const values = {};
  const given = new Set();
  const extras = [];
  const positionals = [];
  let onlyPositional = false;
  for (let i = 0; i < argv.length; i++) {
    const tok = argv[i];
    if (onlyPositional || !isFlagLike(tok)) {
      positionals.push(tok);
      continue;
    }
    if (tok === "--") {
      onlyPositional = true;
      continue;
    }
    const eq = tok.indexOf("=");
    let name = eq > 0 ? tok.slice(0, eq) : tok;
    const inline = eq > 0 ? tok.slice(eq + 1) : undefined;
    if (spec.underscores && name.startsWith("--")) name = `--${name.slice(2).replace(/_/g, "-")}`;
    let flag = byName.get(name);
    let negated = false;
    if (!flag && name.startsWith("--no-")) {
      const pos = byName.get(`--${name.slice(5)}`);
      if (pos && pos.negatable) {
        flag = pos;
        negated = true;
      }
    }
    if (!flag) {
      extras.push(tok);
      continue;
    }
    given.add(flag.dest);
    if (flag.type === "bool") {
      if (inline !== undefined) throw new ArgError(`argument ${name}: ignored explicit argument '${inline}'`);
      values[flag.dest] = !negated;
      continue;
    }
    if (flag.nargs === "+") {
      const vals = inline !== undefined ? [inline] : [];
      while (inline === undefined && i + 1 < argv.length && !isFlagLike(argv[i + 1])) vals.push(argv[++i]);
      if (vals.length === 0) throw new ArgError(`argument ${flag.names.join("/")}: expected at least one argument`);
      values[flag.dest] = vals.map((v) => convert(flag, name, v));
      continue;
    }
    let raw = inline;
    if (raw === undefined) {
      if (i + 1 >= argv.length || isFlagLike(argv[i + 1])) throw new ArgError(`argument ${flag.names.join("/")}: expected one argument`);
      raw = argv[++i];
    }
    values[flag.dest] = convert(flag, name, raw);
  }
  const posSpecs = spec.positionals || [];
  posSpecs.forEach((p, idx) => {
    if (idx < positionals.length) {
      values[p.dest] = positionals[idx];
      given.add(p.dest);
    }
  });
  extras.push(...positionals.slice(posSpecs.length));
  const missing = [
    ...posSpecs.filter((p) => p.required && !given.has(p.dest)).map((p) => p.dest),
    ...spec.flags.filter((f) => f.required && !given.has(f.dest)).map((f) => f.names[0]),
  ];
  if (missing.length > 0) throw new ArgError(`the following arguments are required: ${missing.join(", ")}`);
  if (extras.length > 0) throw new ArgError(`unrecognized arguments: ${extras.join(" ")}`);
  return { values, given };
}

/** Build a flag list from compact "--name[|alias] type[:choices]" lines. */
function flags(lines) {
  return lines.map((line) => {
    const [namesPart, typePart = "str"] = line.trim().split(/\s+/);
    const names = namesPart.split("|");
    const [type, choiceList] = typePart.split(":");
    const negatable = type === "bool!";
    const f = {
      names,
      dest: names[0].replace(/^-+/, "").replace(/-/g, "_"),
      type: negatable ? "bool" : type,
      negatable,
    };
    if (choiceList) f.choices = choiceList.split(",");
    return f;
  });
}

module.exports = { parseArgs, ArgError, flags };
