"use strict";
// pflag-style parsing as the docker CLI does it: --long, --long=value, -s value,
// -svalue, grouped short booleans (-df), "--" ends flags. For `run` parsing stops
// at the first positional (the image); the rest is the container command.

class UsageError extends Error {
  constructor(message, cmd) {
    super(message);
    this.cmd = cmd;
  }
}

/**
 * flags: array of { long, short?, kind: "bool" | "string" | "list" | "int", unsupported? }
 * returns { opts: { [long]: value }, args: string[] }
 */
function parseFlags(cmd, argv, flags, interspersed) {
  const byLong = new Map(flags.map((f) => [f.long, f]));
  const byShort = new Map(flags.filter((f) => f.short).map((f) => [f.short, f]));
  const opts = {};
  const args = [];
  const set = (f, v) => {
    if (f.unsupported) throw new UsageError(`flag --${f.long} is not simulated by the test-site docker (${f.unsupported})`, cmd);
    if (f.kind === "bool") {
      if (v !== undefined && !["true", "false", "1", "0"].includes(v)) {
        throw new UsageError(`invalid argument "${v}" for "--${f.long}" flag: strconv.ParseBool: parsing "${v}": invalid syntax`, cmd);
      }
      opts[f.long] = v === undefined || v === "true" || v === "1";
    } else if (f.kind === "list") {
      (opts[f.long] = opts[f.long] || []).push(v);
    } else if (f.kind === "int") {
      if (!/^-?\d+$/.test(v)) throw new UsageError(`invalid argument "${v}" for "--${f.long}" flag: strconv.ParseInt: parsing "${v}": invalid syntax`, cmd);
      opts[f.long] = Number(v);
    } else {
      opts[f.long] = v;
    }
  };
  let i = 0;
  while (i < argv.length) {
    const a = argv[i];
    if (a === "--") {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (a.startsWith("--") && a.length > 2) {
      const eq = a.indexOf("=");
      const name = eq > 0 ? a.slice(2, eq) : a.slice(2);
      const f = byLong.get(name);
      if (!f) throw new UsageError(`unknown flag: --${name}`, cmd);
      if (f.kind === "bool") set(f, eq > 0 ? a.slice(eq + 1) : undefined);
      else if (eq > 0) set(f, a.slice(eq + 1));
      else {
        if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: --${name}`, cmd);
        set(f, argv[++i]);
      }
      i++;
      continue;
    }
    if (a.startsWith("-") && a.length > 1) {
      let j = 1;
      while (j < a.length) {
        const c = a[j];
        const f = byShort.get(c);
        if (!f) throw new UsageError(`unknown shorthand flag: '${c}' in ${a}`, cmd);
        if (f.kind === "bool") {
          set(f, undefined);
          j++;
          continue;
        }
        let v = a.slice(j + 1);
        if (v.startsWith("=")) v = v.slice(1);
        if (v === "") {
          if (i + 1 >= argv.length) throw new UsageError(`flag needs an argument: '${c}' in -${c}`, cmd);
          v = argv[++i];
        }
        set(f, v);
        break;
      }
      i++;
      continue;
    }
    if (!interspersed) {
      args.push(...argv.slice(i));
      break;
    }
    args.push(a);
    i++;
  }
  return { opts, args };
}

module.exports = { parseFlags, UsageError };
