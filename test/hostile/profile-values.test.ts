/**
 * Profile values against every payload: a bare value, a double-quoted value, a word of
 * EXTRA_DOCKER_ARGS, and a key. The node's bash sources the rendered .env and start.sh splices
 * EXTRA_DOCKER_ARGS unquoted, so the tables list what each form refuses; a payload missing from a
 * table is accepted, and then its value must come back exactly as written.
 */
import { describe, expect, it } from "vitest";
import { parseProfile } from "../../src/render/profile";
import { corpusFile, PAYLOADS, rejected } from "./helpers";

const R = "# sm121-recipe: scripted\n";
const parse = (body: string) => parseProfile("p.env", R + body);

const NEVER =
  "a profile value must not contain $, a backtick, a backslash or a double quote: write the literal value, " +
  "nothing expands it";
const UNQUOTED =
  "without quotes a value may hold only letters, digits and _ . / : = , @ + % -; put it in double quotes";
const WORD =
  "a word here may hold only letters, digits and _ . / : = , @ + % -, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const PAIRS =
  "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed, " +
  "because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script; remove it, " +
  "or set what it does through a -e or -v pair or a recipe key";
const NOT_KV = "the line is not KEY=value, a # comment or a blank line; write KEY=value";
const UPPER = "a key is upper case: A-Z, 0-9 and _, not starting with a digit";
const CRLF = "save the file with LF line endings";

/** A=x<payload>: everything but the bare-word characters is refused. */
const BARE: Record<string, string[]> = {
  "command substitution": [`p.env:2:4: A: the value contains \`$\`; ${NEVER}`],
  backticks: [`p.env:2:4: A: the value contains a backtick; ${NEVER}`],
  "a semicolon": [`p.env:2:4: A: the value contains \`;\` outside double quotes; ${UNQUOTED}`],
  "&&": [`p.env:2:4: A: the value contains \`&\` outside double quotes; ${UNQUOTED}`],
  "a pipe": [`p.env:2:4: A: the value contains \`|\` outside double quotes; ${UNQUOTED}`],
  "a newline": [`p.env:3:1: ${NOT_KV}`],
  "a carriage return": [`p.env:2:4: A: the value contains a carriage return; ${CRLF}`],
  NUL: [`p.env:2:4: A: the value contains control character U+0000 outside double quotes; ${UNQUOTED}`],
  "a single quote": [
    `p.env:2:4: A: the value contains a single quote; single quotes are not part of the profile format; ` +
      `use double quotes`,
  ],
  "a double quote": [`p.env:2:4: A: the value contains a double quote; ${NEVER}`],
  "${IFS}": [`p.env:2:4: A: the value contains \`$\`; ${NEVER}`],
  "a glob": [`p.env:2:4: A: the value contains \`*\` outside double quotes; ${UNQUOTED}`],
  "a space": [`p.env:2:4: A: the value contains a space outside double quotes; ${UNQUOTED}`],
  "an ESC sequence": [`p.env:2:4: A: the value contains control character U+001b outside double quotes; ${UNQUOTED}`],
  "a right-to-left override": [
    `p.env:2:4: A: the value contains invisible format character U+202E outside double quotes; ${UNQUOTED}`,
  ],
};
/** A="x<payload>": only what double quotes still expand, line breaks and invisible characters. */
const IN_QUOTES: Record<string, string[]> = {
  "command substitution": [`p.env:2:5: A: the value contains \`$\`; ${NEVER}`],
  backticks: [`p.env:2:5: A: the value contains a backtick; ${NEVER}`],
  "a newline": [
    `p.env:2:3: A: has no closing quote on its line; only EXTRA_DOCKER_ARGS and EXTRA_VLLM_ARGS may span lines; ` +
      `close the quote on this line`,
    `p.env:3:1: ${NOT_KV}`,
  ],
  "a carriage return": [`p.env:2:5: A: the value contains a carriage return; ${CRLF}`],
  NUL: [`p.env:2:5: A: the value contains control character U+0000; remove it`],
  "a double quote": [
    `p.env:2:6: A: has text after the closing quote; end the line at the closing quote; put a comment on its own line`,
  ],
  "${IFS}": [`p.env:2:5: A: the value contains \`$\`; ${NEVER}`],
  "an ESC sequence": [`p.env:2:5: A: the value contains control character U+001b; remove it`],
  "a right-to-left override": [`p.env:2:5: A: the value contains invisible format character U+202E; remove it`],
};
/** EXTRA_DOCKER_ARGS="-e A=x<payload>": only bare words in -e/-v pairs. */
const IN_DOCKER_ARGS: Record<string, string[]> = {
  "command substitution": [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains \`$\`; ${NEVER}`],
  backticks: [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains a backtick; ${NEVER}`],
  "a semicolon": [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=x;id contains \`;\`; ${WORD}`],
  "&&": [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=x&&id contains \`&\`; ${WORD}`],
  "a pipe": [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=x|id contains \`|\`; ${WORD}`],
  "a newline": [`p.env:3:1: EXTRA_DOCKER_ARGS: \`id\` is not part of a -e or -v pair: ${PAIRS}`],
  "a carriage return": [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains a carriage return; ${CRLF}`],
  NUL: [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains control character U+0000; remove it`],
  "a single quote": [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=x'id contains a single quote; ${WORD}`],
  "a double quote": [
    `p.env:2:27: EXTRA_DOCKER_ARGS: has text after the closing quote; end the line at the closing quote; ` +
      `put a comment on its own line`,
  ],
  "${IFS}": [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains \`$\`; ${NEVER}`],
  "a glob": [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=x* contains \`*\`; ${WORD}`],
  "a space": [`p.env:2:27: EXTRA_DOCKER_ARGS: \`id\` is not part of a -e or -v pair: ${PAIRS}`],
  "an ESC sequence": [`p.env:2:26: EXTRA_DOCKER_ARGS: the value contains control character U+001b; remove it`],
  "a right-to-left override": [
    `p.env:2:26: EXTRA_DOCKER_ARGS: the value contains invisible format character U+202E; remove it`,
  ],
};
/** A<payload>=1: keys are shell names. */
const IN_KEY: Record<string, string[]> = {
  "command substitution": [`p.env:2:1: A$(id): is not a key; ${UPPER}`],
  backticks: [`p.env:2:1: A\`id\`: is not a key; ${UPPER}`],
  "a semicolon": [`p.env:2:1: A;id: is not a key; ${UPPER}`],
  "&&": [`p.env:2:1: A&&id: is not a key; ${UPPER}`],
  "a pipe": [`p.env:2:1: A|id: is not a key; ${UPPER}`],
  "a newline": [`p.env:2:1: ${NOT_KV}`, `p.env:3:1: id: is not a key; ${UPPER}`],
  "a carriage return": [`p.env:2:1: A\\u000Did: is not a key; write KEY=value without white space around =`],
  NUL: [`p.env:2:1: A\\u0000id: is not a key; ${UPPER}`],
  "a single quote": [`p.env:2:1: A'id: is not a key; ${UPPER}`],
  "a double quote": [`p.env:2:1: A"id: is not a key; ${UPPER}`],
  "${IFS}": [`p.env:2:1: A\${IFS}id: is not a key; ${UPPER}`],
  "a glob": [`p.env:2:1: A*: is not a key; a key is A-Z, 0-9 and _, not starting with a digit`],
  "a space": [`p.env:2:1: A id: is not a key; write KEY=value without white space around =`],
  "an ESC sequence": [`p.env:2:1: A\\u001B[2Jid: is not a key; ${UPPER}`],
  "a right-to-left override": [`p.env:2:1: A\\u202Eid: is not a key; ${UPPER}`],
};

describe.each([
  ["a bare value", BARE, (s: string) => `A=x${s}\n`],
  ["a double-quoted value", IN_QUOTES, (s: string) => `A="x${s}"\n`],
  ["an EXTRA_DOCKER_ARGS word", IN_DOCKER_ARGS, (s: string) => `EXTRA_DOCKER_ARGS="-e A=x${s}"\n`],
  ["a key", IN_KEY, (s: string) => `A${s}=1\n`],
] as const)("%s", (_form, table, body) => {
  it.each(PAYLOADS.filter(([title]) => title in table))("refuses %s", (title, payload) => {
    expect(rejected(() => parse(body(payload.slice(1))), "p.env")).toEqual(table[title]);
  });
});

describe("what double quotes keep literal is accepted exactly", () => {
  it.each(PAYLOADS.filter(([title]) => !(title in IN_QUOTES)))("%s", (_title, payload) => {
    expect(parse(`A="x${payload.slice(1)}"\n`).entries.map((e) => [e.key, e.value])).toEqual([
      ["A", `x${payload.slice(1)}`],
    ]);
  });
});

describe("other hostile profile lines", () => {
  type Case = [title: string, body: string, messages: string[]];
  const cases: Case[] = [
    [
      "an export line",
      "export A=1\n",
      ["p.env:2:1: export A: is not a key; remove `export`: a profile holds plain KEY=value lines"],
    ],
    ["a command line", "rm -rf /\n", [`p.env:2:1: ${NOT_KV}`]],
    ["a source line", ". /etc/profile\n", [`p.env:2:1: ${NOT_KV}`]],
    ["a function definition", "f() { id; }\n", [`p.env:2:1: ${NOT_KV}`]],
    [
      "an assignment followed by a command",
      "A=1; id\n",
      [`p.env:2:4: A: the value contains \`;\` outside double quotes; ${UNQUOTED}`],
    ],
    ["an array assignment", "A=(a b)\n", [`p.env:2:3: A: the value contains \`(\` outside double quotes; ${UNQUOTED}`]],
    [
      "a lookalike key (Cyrillic A)",
      "\u0410=1\n",
      [`p.env:2:1: \u0410: is not a key; a key is A-Z, 0-9 and _, not starting with a digit`],
    ],
    [
      "an escaped quote",
      'A="x\\"; id; \\""\n',
      [
        "p.env:2:7: A: has text after the closing quote; end the line at the closing quote; " +
          "put a comment on its own line",
      ],
    ],
    [
      "a --api-key hidden in EXTRA_VLLM_ARGS",
      'EXTRA_VLLM_ARGS="--x --api-key=sk-1"\n',
      [
        "p.env:2:22: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; " +
          "put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "a docker flag smuggled in a -e value",
      'EXTRA_DOCKER_ARGS="-e --privileged"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e --privileged is not NAME=VALUE; " +
          "write -e NAME=VALUE with a name of letters, digits and _",
      ],
    ],
    [
      "a -v without a target",
      'EXTRA_DOCKER_ARGS="-v /etc"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -v /etc is not SRC:DST[:ro|rw]; write -v /absolute/source:/absolute/target, " +
          "optionally with :ro or :rw",
      ],
    ],
    [
      "a -v that climbs with ..",
      'EXTRA_DOCKER_ARGS="-v /srv/../../etc:/x"\n',
      [
        'p.env:2:23: EXTRA_DOCKER_ARGS: -v /srv/../../etc:/x has a ".." segment; ' +
          "write -v /absolute/source:/absolute/target, optionally with :ro or :rw, without ..",
      ],
    ],
    [
      "a -v with a relative source",
      'EXTRA_DOCKER_ARGS="-v etc:/x"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -v etc:/x: source etc is not an absolute path; " +
          "write -v /absolute/source:/absolute/target, optionally with :ro or :rw; the source is a path on the node",
      ],
    ],
    [
      "a secret in -e",
      'EXTRA_DOCKER_ARGS="-e API_KEY=sk-1"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e API_KEY puts a secret into EXTRA_DOCKER_ARGS; remove it; " +
          "API_KEY belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "a --mount flag",
      'EXTRA_DOCKER_ARGS="--mount type=bind,src=/,dst=/host"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`--mount\` is not part of a -e or -v ` +
          `pair: ${PAIRS.replace("; remove it, or set what it does through a -e or -v pair or a recipe key", "")}; ` +
          `use the short form: -e NAME=VALUE or -v SRC:DST[:ro|rw]`,
        `p.env:2:28: EXTRA_DOCKER_ARGS: \`type=bind,src=/,dst=/host\` is not part of a -e or -v pair: ${PAIRS}`,
      ],
    ],
  ];
  it.each(cases)("%s", (_, body, messages) => expect(rejected(() => parse(body), "p.env")).toEqual(messages));
});

describe("byte-level corpus files", () => {
  it("refuses a CRLF profile at its first value (corpus raw/profile-crlf.env)", () => {
    expect(rejected(() => parseProfile("p.env", corpusFile("raw/profile-crlf.env").toString("utf8")), "p.env")).toEqual(
      [`p.env:3:4: A: the value contains a carriage return; ${CRLF}`],
    );
  });
  it("refuses a byte order mark (corpus raw/profile-bom.env)", () => {
    expect(rejected(() => parseProfile("p.env", corpusFile("raw/profile-bom.env").toString("utf8")), "p.env")).toEqual([
      "p.env:1:1: the file starts with a byte order mark; save it as UTF-8 without a BOM",
    ]);
  });
  it("refuses bytes that are not UTF-8 (corpus raw/profile-latin1.env)", () => {
    expect(
      rejected(() => parseProfile("p.env", corpusFile("raw/profile-latin1.env").toString("utf8")), "p.env"),
    ).toEqual([`p.env:2:3: A: the value contains \`\uFFFD\` outside double quotes; ${UNQUOTED}`]);
  });
});
