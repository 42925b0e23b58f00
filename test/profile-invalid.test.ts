/** parseProfile on invalid profiles: the line and value syntax, keys and directives, one exact message each. */
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { SpecErrors } from "../src/recipe/errors";
import { parseProfile } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";

const R = "# sm121-recipe: qwen38-flash\n";

const UNQUOTED =
  "without quotes a value may hold only letters, digits and _ . / : = , @ + % -; put it in double quotes";
const NEVER =
  "a profile value must not contain $, a backtick, a backslash or a double quote: write the literal value, " +
  "nothing expands it";
const DIRECTIVES =
  "sm121-recipe, sm121-status, sm121-runnable, sm121-description, sm121-mkdir, sm121-proof, sm121-client";

describe("parseProfile: invalid profiles, one exact message each", () => {
  const cases: Array<[string, string, string[]]> = [
    [
      "space in an unquoted value",
      "A=hello world\n",
      [`p.env:2:8: A: the value contains a space outside double quotes; ${UNQUOTED}`],
    ],
    ["$ in double quotes", 'A="a$b"\n', [`p.env:2:5: A: the value contains \`$\`; ${NEVER}`]],
    ["backtick in double quotes", 'A="x`id`"\n', [`p.env:2:5: A: the value contains a backtick; ${NEVER}`]],
    ["backslash in double quotes", 'A="C:\\x"\n', [`p.env:2:6: A: the value contains a backslash; ${NEVER}`]],
    ["$ without quotes", "A=$HOME\n", [`p.env:2:3: A: the value contains \`$\`; ${NEVER}`]],
    [
      "double quote inside an unquoted value",
      'A=x"y"\n',
      [`p.env:2:4: A: the value contains a double quote; ${NEVER}`],
    ],
    [
      "single-quoted value",
      "A='x'\n",
      ["p.env:2:3: A: single quotes are not part of the profile format; use double quotes"],
    ],
    [
      "single quote inside an unquoted value",
      "A=it's\n",
      [
        "p.env:2:5: A: the value contains a single quote; single quotes are not part of the profile format; " +
          "use double quotes",
      ],
    ],
    [
      "a plain key spanning lines",
      'A="x\ny"\n',
      [
        "p.env:2:3: A: has no closing quote on its line; " +
          "only EXTRA_DOCKER_ARGS and EXTRA_VLLM_ARGS may span lines; close the quote on this line",
        "p.env:3:1: the line is not KEY=value, a # comment or a blank line; write KEY=value",
      ],
    ],
    [
      "unterminated multi-line value",
      'EXTRA_VLLM_ARGS="\n  --enforce-eager\n',
      ['p.env:2:17: EXTRA_VLLM_ARGS: has no closing quote; close the value with a " on a later line'],
    ],
    [
      "comment after the closing quote",
      'A="x" # note\n',
      [
        "p.env:2:7: A: has text after the closing quote; end the line at the closing quote; " +
          "put a comment on its own line",
      ],
    ],
    [
      "text after a multi-line closing quote",
      'EXTRA_VLLM_ARGS="\n  --enforce-eager\n" extra\n',
      [
        "p.env:4:3: EXTRA_VLLM_ARGS: has text after the closing quote; end the line at the closing quote; " +
          "put a comment on its own line",
      ],
    ],
    [
      "a key twice",
      "A=1\nA=2\n",
      ["p.env:3:1: A: occurs a second time (first on line 2); a key may occur once: keep one assignment"],
    ],
    [
      "HF_TOKEN",
      "HF_TOKEN=hf_secret123\n",
      [
        "p.env:2:1: HF_TOKEN: is not allowed in a profile; " +
          "remove it: HF_TOKEN belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "API_KEY",
      'API_KEY="sk-secret123"\n',
      [
        "p.env:2:1: API_KEY: is not allowed in a profile; " +
          "remove it: API_KEY belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "TP1_CONTAINER_NAME",
      "TP1_CONTAINER_NAME=other\n",
      [
        "p.env:2:1: TP1_CONTAINER_NAME: is not allowed in a profile; " +
          "remove it: sm121 finds the server by the recipe's container name in the site",
      ],
    ],
    [
      "node key HF_HOME",
      "HF_HOME=/hf\n",
      [
        "p.env:2:1: HF_HOME: is a node key, which a profile cannot set; " +
          "set it in the site's node env (nodes.<node>.env)",
      ],
    ],
    [
      "node key PORT",
      "PORT=8001\n",
      ["p.env:2:1: PORT: is a node key, which a profile cannot set; set it in the site's node env (nodes.<node>.env)"],
    ],
    [
      "unknown directive close to one",
      "# sm121-mkdirs: /x\n",
      [
        "p.env:2:3: directive sm121-mkdirs: is not a directive; " +
          `did you mean sm121-mkdir? the directives are ${DIRECTIVES}`,
      ],
    ],
    [
      "misspelt pulse- directive",
      "# pulse-recpie: qwen38-flash\n",
      [
        "p.env:2:3: directive pulse-recpie: is not a directive; " +
          `did you mean pulse-recipe? the directives are ${DIRECTIVES.replaceAll("sm121-", "pulse-")}`,
      ],
    ],
    [
      "unknown directive far from all",
      "# sm121-bogus: x\n",
      [`p.env:2:3: directive sm121-bogus: is not a directive; the directives are ${DIRECTIVES}`],
    ],
    [
      "bad status",
      "# sm121-status: beta\n",
      ["p.env:2:17: directive sm121-status: `beta` is not a status; use stable or experimental"],
    ],
    [
      "bad runnable",
      "# pulse-runnable: no\n",
      ["p.env:2:19: directive pulse-runnable: `no` is not true or false; use true, or false for a render-only profile"],
    ],
    [
      "recipe twice across prefixes",
      "# pulse-recipe: other\n",
      ["p.env:2:3: directive pulse-recipe: occurs a second time (first on line 1); keep one of them"],
    ],
    [
      "directive without a colon",
      "# sm121-status stable\n",
      ["p.env:2:15: directive sm121-status: has no colon after its name; write `# sm121-status: value`"],
    ],
    [
      "a control character in a proof",
      "# sm121-proof: a\tb\n",
      ["p.env:2:17: directive sm121-proof: contains a tab; remove it"],
    ],
    [
      "empty proof",
      "# sm121-proof:\n",
      ["p.env:2:15: directive sm121-proof: has no value; write `# sm121-proof: text that the container log must show`"],
    ],
    [
      "relative mkdir",
      "# sm121-mkdir: cache/x\n",
      [
        "p.env:2:16: directive sm121-mkdir: `cache/x` is not an absolute path; " +
          "give an absolute path on the node, or start with a {{variable}}",
      ],
    ],
    [
      "lower-case key",
      "max_num_seqs=4\n",
      ["p.env:2:1: max_num_seqs: is not a key; a key is upper case: A-Z, 0-9 and _, not starting with a digit"],
    ],
    [
      "export",
      "export A=1\n",
      ["p.env:2:1: export A: is not a key; remove `export`: a profile holds plain KEY=value lines"],
    ],
    ["spaces around =", "A = 1\n", ["p.env:2:1: A: is not a key; write KEY=value without white space around ="]],
    [
      "a key starting with a digit",
      "1A=1\n",
      ["p.env:2:1: 1A: is not a key; a key is A-Z, 0-9 and _, not starting with a digit"],
    ],
    [
      "a line that is no assignment",
      "just words\n",
      ["p.env:2:1: the line is not KEY=value, a # comment or a blank line; write KEY=value"],
    ],
    ["an indented assignment", "  A=1\n", ["p.env:2:1: the line is indented; start KEY=value lines in column 1"]],
    [
      "malformed placeholder",
      'A="{{ x }}"\n',
      ["p.env:2:4: A: the value has a malformed placeholder; write a variable as {{name}} (letters, digits and _)"],
    ],
    [
      "CRLF line ending",
      "A=1\r\n",
      ["p.env:2:4: A: the value contains a carriage return; save the file with LF line endings"],
    ],
  ];
  it.each(cases)("%s", (_name, body, expected) => {
    expect(messages(() => parseProfile("p.env", R + body))).toEqual(expected);
  });

  it("has at least 30 invalid cases", () => {
    expect(cases.length).toBeGreaterThanOrEqual(30);
  });

  it("requires sm121-recipe", () => {
    expect(messages(() => parseProfile("p.env", "A=1\n"))).toEqual([
      "p.env:1:1: directive sm121-recipe: is missing; " +
        "add `# sm121-recipe: <recipe>` with the recipe that the profile is for",
    ]);
  });

  it("rejects a file name that is not a profile name", () => {
    expect(messages(() => parseProfile("dir/bad name.env", R))).toEqual([
      "dir/bad name.env:1:1: profile name: `bad name` (the file name) is not a profile name; " +
        "name the file with letters, digits, . _ and -, e.g. best.env",
    ]);
  });

  it("rejects a byte order mark", () => {
    expect(messages(() => parseProfile("p.env", `\ufeff${R}`))).toEqual([
      "p.env:1:1: the file starts with a byte order mark; save it as UTF-8 without a BOM",
    ]);
  });

  it("collects every error of a file, in file order, as SpecErrors", () => {
    const text = "A=1 2\n# sm121-status: maybe\nHF_TOKEN=x\n";
    let thrown: unknown;
    try {
      parseProfile("p.env", text);
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SpecErrors);
    const errors = (thrown as SpecErrors).errors;
    expect(errors.map((e) => [e.line, e.col, e.field])).toEqual([
      [1, 4, "A"],
      [2, 17, "directive sm121-status"],
      [3, 1, "HF_TOKEN"],
      [1, 1, "directive sm121-recipe"],
    ]);
    expect(said(errors[0]?.fix)).toBe(UNQUOTED);
  });

  it("never puts a secret value into a message", () => {
    const text = [
      "HF_TOKEN=hf_secret123",
      "API_KEY='sk-secret123'",
      'EXTRA_DOCKER_ARGS="-e API_KEY=sk-secret123 API_KEY=sk-secret123 -e HF_TOKEN=hf;secret123"',
      'EXTRA_VLLM_ARGS="--api-key sk-secret123"',
    ].join("\n");
    const all = messages(() => parseProfile("p.env", R + text)).join("\n");
    expect(all).toContain("API_KEY=<redacted>");
    expect(all).not.toMatch(/secret123/);
  });
});
