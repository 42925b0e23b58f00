"use strict";
// A subset of Go text/template as docker --format uses it: {{.A.B}}, {{json .X}},
// {{index .M "k"}}, {{.Label "k"}}, {{join .L ","}}, lower/upper/len/printf/title,
// pipes, {{range}}/{{if}}/{{else}}/{{end}}, {{- -}} trimming. Anything else is a
// template error, as in docker.
const MAPS = new WeakSet();
const asMap = (o) => {
  if (o && typeof o === "object") MAPS.add(o);
  return o;
};

class TemplateError extends Error {}

function goString(v) {
  if (v === undefined) return "<no value>";
  if (v === null) return "[]";
  if (Array.isArray(v)) return `[${v.map(goString).join(" ")}]`;
  if (typeof v === "object") {
    if (MAPS.has(v)) return `map[${Object.keys(v).sort().map((k) => `${k}:${goString(v[k])}`).join(" ")}]`;
    return `{${Object.values(v).map(goString).join(" ")}}`;
  }
  return String(v);
}

function tokenize(tpl) {
  const out = [];
  let i = 0;
  while (i < tpl.length) {
    const open = tpl.indexOf("{{", i);
    if (open < 0) {
      out.push({ t: "text", v: tpl.slice(i) });
      break;
    }
    out.push({ t: "text", v: tpl.slice(i, open) });
    const close = tpl.indexOf("}}", open);
    if (close < 0) throw new TemplateError(`template parsing error: template: :1: unclosed action`);
    let body = tpl.slice(open + 2, close);
    if (/^- /.test(body)) {
      const prev = out[out.length - 1];
      prev.v = prev.v.replace(/\s+$/, "");
      body = body.slice(2);
    }
    let trimNext = false;
    if (/ -$/.test(body)) {
      trimNext = true;
      body = body.slice(0, -2);
    }
    out.push({ t: "action", v: body.trim() });
    i = close + 2;
    if (trimNext) while (i < tpl.length && /\s/.test(tpl[i])) i++;
  }
  return out.filter((x) => !(x.t === "text" && x.v === ""));
}

function words(s) {
  const out = [];
  const re = /"((?:[^"\\]|\\.)*)"|(\S+)/g;
  let m;
  while ((m = re.exec(s))) out.push(m[1] !== undefined ? { str: JSON.parse(`"${m[1]}"`) } : { w: m[2] });
  return out;
}

function parse(tokens) {
  let pos = 0;
  function block(stopAt) {
    const nodes = [];
    while (pos < tokens.length) {
      const tk = tokens[pos++];
      if (tk.t === "text") {
        nodes.push({ k: "text", v: tk.v });
        continue;
      }
      const [head, ...rest] = tk.v.split(/\s+/);
      if (stopAt.includes(head)) return { nodes, stop: head };
      if (head === "range" || head === "if") {
        const body = block(["end", "else"]);
        let alt = { nodes: [] };
        if (body.stop === "else") alt = block(["end"]);
        if (!body.stop) throw new TemplateError(`template parsing error: template: :1: unexpected EOF`);
        nodes.push({ k: head, pipe: rest.join(" "), body: body.nodes, alt: alt.nodes });
        continue;
      }
      if (head === "end" || head === "else") throw new TemplateError(`template parsing error: template: :1: unexpected {{${head}}}`);
      nodes.push({ k: "out", pipe: tk.v });
    }
    return { nodes, stop: null };
  }
  return block([]).nodes;
}

const FUNCS = {
  json: (v) => JSON.stringify(v === undefined ? null : v),
  index: (v, ...keys) => keys.reduce((o, k) => (o == null ? undefined : o[k]), v),
  join: (l, sep) => (Array.isArray(l) ? l.join(sep) : String(l)),
  split: (s, sep) => String(s).split(sep),
  lower: (s) => String(s).toLowerCase(),
  upper: (s) => String(s).toUpperCase(),
  title: (s) => String(s).replace(/\b\w/g, (c) => c.toUpperCase()),
  len: (v) => (v == null ? 0 : Array.isArray(v) || typeof v === "string" ? v.length : Object.keys(v).length),
  printf: (f, ...a) => String(f).replace(/%[svdq%]/g, (m) => (m === "%%" ? "%" : m === "%q" ? JSON.stringify(goString(a.shift())) : goString(a.shift()))),
  println: (...a) => `${a.map(goString).join(" ")}\n`,
  truncate: (s, n) => String(s).slice(0, n),
};

function field(dot, chain, tplText) {
  let v = dot;
  let typeName = "context";
  for (const name of chain.split(".").filter((x) => x)) {
    if (v === null || v === undefined) return undefined;
    if (typeof v !== "object") throw new TemplateError(`template: :1: executing "" at <.${chain.slice(1)}>: can't evaluate field ${name} in type ${typeof v}`);
    if (MAPS.has(v)) v = v[name];
    else if (name in v) {
      v = typeof v[name] === "function" ? v[name].bind(v) : v[name];
      typeName = name;
    } else throw new TemplateError(`template: ${tplText}: executing "" at <.${chain.slice(1)}>: can't evaluate field ${name} in type *types.${typeName}`);
  }
  return v;
}

function evalPipe(pipe, dot, tplText) {
  let prev;
  let first = true;
  for (const cmd of pipe.split(/\s\|\s/)) {
    const ws = words(cmd.trim());
    const arg = (x) => (x.str !== undefined ? x.str : x.w === "." ? dot : x.w.startsWith(".") ? field(dot, x.w, tplText) : /^-?\d+$/.test(x.w) ? Number(x.w) : badFn(x.w));
    const [head, ...rest] = ws;
    if (!head) throw new TemplateError(`template parsing error: template: :1: missing value for command`);
    const extra = first ? [] : [prev];
    if (head.w !== undefined && /^[a-z]\w*$/.test(head.w)) {
      const fn = FUNCS[head.w];
      if (!fn) badFn(head.w);
      prev = fn(...rest.map(arg), ...extra);
    } else {
      const v = arg(head);
      prev = typeof v === "function" ? v(...rest.map(arg), ...extra) : v;
    }
    first = false;
  }
  return prev;
}

function badFn(name) {
  throw new TemplateError(`template parsing error: template: :1: function "${name}" not defined`);
}

function truthy(v) {
  if (Array.isArray(v)) return v.length > 0;
  if (v && typeof v === "object") return Object.keys(v).length > 0;
  return Boolean(v);
}

function run(nodes, dot, tplText) {
  let out = "";
  for (const n of nodes) {
    if (n.k === "text") out += n.v;
    else if (n.k === "out") {
      const v = evalPipe(n.pipe, dot, tplText);
      out += typeof v === "string" ? v : goString(v);
    } else if (n.k === "if") out += run(truthy(evalPipe(n.pipe, dot, tplText)) ? n.body : n.alt, dot, tplText);
    else {
      const v = evalPipe(n.pipe, dot, tplText);
      const items = Array.isArray(v) ? v : v && typeof v === "object" ? Object.keys(v).sort().map((k) => v[k]) : [];
      if (items.length === 0) out += run(n.alt, dot, tplText);
      for (const it of items) out += run(n.body, it, tplText);
    }
  }
  return out;
}

/** Compile once, render per value. Throws TemplateError with docker's wording. */
function compile(tpl) {
  const nodes = parse(tokenize(tpl));
  return (dot) => run(nodes, dot, ":1:2");
}

module.exports = { compile, asMap, goString, TemplateError };
