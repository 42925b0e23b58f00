/**
 * Recipes that are not TOML, have keys twice, have the wrong types, or spell a key or a value
 * with look-alike letters. Each is refused with the spot and the field, never with a TypeError.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../../src/engines/recipes";
import { corpusFile, rejected } from "./helpers";

const F = "recipes/x.toml";
/** A valid vLLM recipe of four lines; cases append from line 5. */
const BASE = [
  'engine = "vllm"',
  'model = "Qwen/Qwen3-8B"',
  'image = "nvcr.io/nvidia/vllm:26.01-py3"',
  "port = 8000",
  "",
].join("\n");
const bad = (text: string): string[] => rejected(() => parseRecipe(F, text), F);
const SYNTAX = "fix the syntax at this spot";

type Case = [title: string, text: string, messages: string[]];

describe("TOML syntax", () => {
  const cases: Case[] = [
    ["an unclosed array", `${BASE}args = ["a",\n`, [`${F}:6:1: TOML syntax: invalid value; ${SYNTAX}`]],
    [
      "an unclosed inline table",
      `${BASE}env = { A = "1"\n`,
      [`${F}:6:1: TOML syntax: expected comma or end of structure; ${SYNTAX}`],
    ],
    [
      "a table defined twice",
      `${BASE}[env]\nA = "1"\n[env]\nB = "2"\n`,
      [`${F}:7:2: TOML syntax: trying to redefine an already defined table or value; ${SYNTAX}`],
    ],
    [
      "a key set twice",
      `${BASE}model = "Qwen/Qwen3-32B"\n`,
      [`${F}:5:1: TOML syntax: trying to redefine an already defined table or value; ${SYNTAX}`],
    ],
    [
      "a dotted key and its table",
      `${BASE}env.A = "1"\n[env]\nB = "2"\n`,
      [`${F}:6:2: TOML syntax: trying to redefine an already defined table or value; ${SYNTAX}`],
    ],
    [
      "a value quoted with backticks",
      `${BASE}served_model_name = \`id\`\n`,
      [`${F}:5:21: TOML syntax: invalid value; ${SYNTAX}`],
    ],
    [
      "an unknown escape",
      `${BASE}served_model_name = "\\q"\n`,
      [`${F}:5:23: TOML syntax: unrecognised escape sequence; ${SYNTAX}`],
    ],
    [
      "a lone surrogate escape",
      `${BASE}served_model_name = "\\uD800"\n`,
      [`${F}:5:22: TOML syntax: invalid unicode escape; ${SYNTAX}`],
    ],
    [
      "a bare word as a value",
      `${BASE}served_model_name = qwen\n`,
      [`${F}:5:21: TOML syntax: invalid value; ${SYNTAX}`],
    ],
    [
      "an unclosed multi-line string",
      `${BASE}served_model_name = """qwen\n`,
      [`${F}:5:21: TOML syntax: unfinished string; ${SYNTAX}`],
    ],
    [
      "a raw NUL in a string",
      `${BASE}served_model_name = "a\u0000b"\n`,
      [`${F}:5:23: TOML syntax: control characters are not allowed in strings; ${SYNTAX}`],
    ],
    [
      "a raw NUL in a comment",
      `${BASE}# \u0000\n`,
      [`${F}:5:3: TOML syntax: control characters are not allowed in comments; ${SYNTAX}`],
    ],
    [
      "a raw ESC in a string",
      `${BASE}served_model_name = "a\u001bb"\n`,
      [`${F}:5:23: TOML syntax: control characters are not allowed in strings; ${SYNTAX}`],
    ],
    [
      "a lone carriage return ending a line",
      'engine = "vllm"\rmodel = "x"\n',
      [`${F}:1:16: TOML syntax: each key-value declaration must be followed by an end-of-line; ${SYNTAX}`],
    ],
    [
      "a number with a trailing underscore",
      `${BASE}tp = 2_\n`,
      [`${F}:5:6: TOML syntax: unfinished numeric value; ${SYNTAX}`],
    ],
    [
      "100,000 nested arrays",
      `${BASE}args = ${"[".repeat(100_000)}${"]".repeat(100_000)}\n`,
      [`${F}:5:1008: TOML syntax: document contains excessively nested structures. aborting.; ${SYNTAX}`],
    ],
    [
      "20,000 nested inline tables",
      `${BASE}[dgpp.engine]\nx = ${"{a=".repeat(20_000)}1${"}".repeat(20_000)}\n`,
      [`${F}:6:3005: TOML syntax: document contains excessively nested structures. aborting.; ${SYNTAX}`],
    ],
    [
      "a UTF-16 file (the corpus file)",
      corpusFile("raw/recipe-utf16.toml").toString("utf8"),
      [`${F}:1:1: TOML syntax: illegal character in key; ${SYNTAX}`],
    ],
    [
      "a Cyrillic e in a bare key",
      `${BASE}sеrved_model_name = "q"\n`,
      [`${F}:5:2: TOML syntax: illegal character in key; ${SYNTAX}`],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

describe("wrong types", () => {
  const got = (key: string, line: number, type: string, want: string) =>
    `${F}:${line}:1: ${key}: expected ${want}, got ${type}; write a${/^[aeiou]/.test(want) ? "n" : ""} ${want}`;
  const cases: Case[] = [
    [
      "a date as the model",
      BASE.replace('model = "Qwen/Qwen3-8B"', "model = 1979-05-27"),
      [got("model", 2, "TomlDate", "string")],
    ],
    ["port = inf", BASE.replace("port = 8000", "port = inf"), [got("port", 4, "Infinity", "number")]],
    ["port = nan", BASE.replace("port = 8000", "port = nan"), [got("port", 4, "NaN", "number")]],
    [
      "a fractional port",
      BASE.replace("port = 8000", "port = 8000.5"),
      [`${F}:4:1: port: expected int, got number; write an int`],
    ],
    ["tp = true", `${BASE}tp = true\n`, [got("tp", 5, "boolean", "number")]],
    ["env as an array", `${BASE}env = ["A=1"]\n`, [`${F}:5:1: env: expected record, got array; write a record`]],
    [
      "an env value as a number",
      `${BASE}[env]\nA = 1\n`,
      [`${F}:6:1: env.A: expected string, got number; write a string`],
    ],
    [
      "hooks as a string",
      `${BASE}hooks = "reboot"\n`,
      [`${F}:5:1: hooks: expected object, got string; write an object`],
    ],
    [
      "an argument as an array",
      `${BASE}args = [["--a"]]\n`,
      [`${F}:5:9: args[0]: expected string, got array; write a string`],
    ],
    [
      "mounts as a string",
      `${BASE}mounts = "/a:/b"\n`,
      [`${F}:5:1: mounts: expected array, got string; write an array`],
    ],
    [
      "readiness as a number",
      `${BASE}readiness = 5\n`,
      [`${F}:5:1: readiness: expected object, got number; write an object`],
    ],
    [
      "the DGPP engine table as a string",
      'engine = "dgpp"\ndeploy = "native"\nmodel = "a/b"\n[dgpp]\nengine = "fp8"\n',
      [`${F}:5:1: dgpp.engine: expected record, got string; write a record`],
    ],
    ["an empty entrypoint", `${BASE}entrypoint = []\n`, [`${F}:5:1: entrypoint: is empty; use at least 1`]],
    ["port 99999", BASE.replace("port = 8000", "port = 99999"), [`${F}:4:1: port: is above 65535; use at most 65535`]],
    [
      "a privileged port",
      BASE.replace("port = 8000", "port = 80"),
      [`${F}:4:1: port: must be 1024 or above; pick an unprivileged port such as 8000`],
    ],
    ["tp = 0", `${BASE}tp = 0\n`, [`${F}:5:1: tp: is below 1; use at least 1`]],
    ["tp = -1", `${BASE}tp = -1\n`, [`${F}:5:1: tp: is below 1; use at least 1`]],
    [
      "a top-level __proto__ key",
      `${BASE}__proto__ = "x"\n`,
      [`${F}:5:1: __proto__: __proto__ is not a name sm121 accepts; rename the key`],
    ],
    [
      "an env key __proto__ (zod's records drop it silently)",
      `${BASE}[env]\n__proto__ = "x"\n`,
      [`${F}:6:1: env.__proto__: __proto__ is not a name sm121 accepts; rename the key`],
    ],
    [
      "a DGPP engine key __proto__",
      'engine = "dgpp"\ndeploy = "native"\nmodel = "a/b"\n[dgpp.engine]\n__proto__ = { polluted = 1 }\n',
      [`${F}:5:1: dgpp.engine.__proto__: __proto__ is not a name sm121 accepts; rename the key`],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

describe("unicode look-alikes", () => {
  const cases: Case[] = [
    [
      "a Cyrillic e in a quoted key",
      `${BASE}"sеrved_model_name" = "q"\n`,
      [`${F}:5:1: sеrved_model_name: unknown key; did you mean served_model_name?`],
    ],
    [
      "a Cyrillic e in the deploy target",
      `${BASE}deploy = "dockеr"\n`,
      [`${F}:5:1: deploy: "dockеr" is not allowed; use one of "docker", "tmux", "native", "script"`],
    ],
    [
      "a Roman numeral l in the engine",
      BASE.replace('engine = "vllm"', 'engine = "vⅼlm"'),
      [`${F}:1:1: engine: must be an engine name; use one of vllm, sglang, gr8, dgpp`],
    ],
    [
      "fullwidth letters in the served name",
      `${BASE}served_model_name = "ｑｗｅｎ"\n`,
      [`${F}:5:1: served_model_name: may contain only letters, digits and . _ / : -; rename it`],
    ],
    [
      "a Cyrillic A in an env key",
      `${BASE}[env]\n"АBC" = "1"\n`,
      [`${F}:6:1: env.АBC: env keys are upper-case shell names; rename it`],
    ],
    [
      "a Greek omicron in the image",
      BASE.replace("nvcr.io", "nvcr.iο"),
      [`${F}:3:1: image: is not a docker image reference; write e.g. nvcr.io/nvidia/vllm:26.01-py3`],
    ],
    [
      "a zero-width space in the model",
      BASE.replace("Qwen/Qwen3-8B", "Qwen/\u200bQwen3-8B"),
      [
        `${F}:2:1: model: model may contain only letters, digits and ~ @ : / . _ + -; remove spaces, ` +
          `quotes and shell characters`,
      ],
    ],
    [
      "a Cyrillic a in the name",
      `${BASE}name = "qwеn3"\n`,
      [`${F}:5:1: name: must be lower-case letters, digits and -, at most 48; rename it, e.g. qwen3-8b-tp2`],
    ],
    [
      "a right-to-left override in an argument",
      `${BASE}args = ["--max-model-len", "\u202e8192"]\n`,
      [
        `${F}:5:28: args[1]: the argument contains a control character or an invisible format character; remove it: ` +
          `the plan would not show it`,
      ],
    ],
    [
      "a zero-width joiner in a flag",
      `${BASE}args = ["--enforce\u200d-eager"]\n`,
      [
        `${F}:5:9: args[0]: the argument contains a control character or an invisible format character; remove it: ` +
          `the plan would not show it`,
      ],
    ],
  ];
  it.each(cases)("%s", (_, text, messages) => expect(bad(text)).toEqual(messages));
});

describe("a UTF-8 byte order mark and CRLF line endings are plain TOML", () => {
  it("reads them", () => {
    const r = parseRecipe(F, `\ufeff${BASE.replace(/\n/g, "\r\n")}`);
    expect([r.model, r.port]).toEqual(["Qwen/Qwen3-8B", 8000]);
  });
});
