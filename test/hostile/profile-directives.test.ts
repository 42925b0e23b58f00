/**
 * Profile directives against every payload: sm121-mkdir (a path that `up` creates on the node),
 * sm121-proof / -client / -description (free text shown and grepped, quoted when rendered), and
 * sm121-recipe / -status / -runnable (fixed vocabularies).
 */
import { describe, expect, it } from "vitest";
import { parseProfile } from "../../src/render/profile";
import { LINE_BREAKERS, PAYLOADS, rejected } from "./helpers";

const R = "# sm121-recipe: scripted\n";
const parse = (body: string, withRecipe = true) => parseProfile("p.env", (withRecipe ? R : "") + body);

const NEVER =
  "a profile value must not contain $, a backtick, a backslash or a double quote: write the literal value, " +
  "nothing expands it";
const UNQUOTED =
  "without quotes a value may hold only letters, digits and _ . / : = , @ + % -; put it in double quotes";
const NOT_KV = "the line is not KEY=value, a # comment or a blank line; write KEY=value";
const NAME = "use letters, digits, . _ and -, as in the site's recipes";
const MISSING =
  "p.env:1:1: directive sm121-recipe: is missing; add `# sm121-recipe: " +
  "<recipe>` with the recipe that the profile is for";

/** # sm121-mkdir: /srv/x<payload> */
const IN_MKDIR: Record<string, string[]> = {
  "command substitution": [`p.env:2:22: directive sm121-mkdir: contains \`$\`; ${NEVER}`],
  backticks: [`p.env:2:22: directive sm121-mkdir: contains a backtick; ${NEVER}`],
  "a semicolon": [`p.env:2:22: directive sm121-mkdir: contains \`;\` outside double quotes; ${UNQUOTED}`],
  "&&": [`p.env:2:22: directive sm121-mkdir: contains \`&\` outside double quotes; ${UNQUOTED}`],
  "a pipe": [`p.env:2:22: directive sm121-mkdir: contains \`|\` outside double quotes; ${UNQUOTED}`],
  "a newline": [`p.env:3:1: ${NOT_KV}`],
  "a carriage return": [`p.env:2:22: directive sm121-mkdir: contains a carriage return; remove it`],
  NUL: [`p.env:2:22: directive sm121-mkdir: contains control character U+0000; remove it`],
  "a single quote": [
    `p.env:2:22: directive sm121-mkdir: contains a single quote; single quotes are not part of the profile format; ` +
      `use double quotes`,
  ],
  "a double quote": [`p.env:2:22: directive sm121-mkdir: contains a double quote; ${NEVER}`],
  "${IFS}": [`p.env:2:22: directive sm121-mkdir: contains \`$\`; ${NEVER}`],
  "a glob": [`p.env:2:22: directive sm121-mkdir: contains \`*\` outside double quotes; ${UNQUOTED}`],
  "a space": [`p.env:2:22: directive sm121-mkdir: contains a space outside double quotes; ${UNQUOTED}`],
  "an ESC sequence": [`p.env:2:22: directive sm121-mkdir: contains control character U+001b; remove it`],
  "a right-to-left override": [
    `p.env:2:22: directive sm121-mkdir: contains invisible format character U+202E; remove it`,
  ],
};
/** # sm121-proof: x<payload> (the same rule holds for -client and -description) */
const IN_PROOF: Record<string, string[]> = {
  "a newline": [`p.env:3:1: ${NOT_KV}`],
  "a carriage return": [`p.env:2:17: directive sm121-proof: contains a carriage return; remove it`],
  NUL: [`p.env:2:17: directive sm121-proof: contains control character U+0000; remove it`],
  "an ESC sequence": [`p.env:2:17: directive sm121-proof: contains control character U+001b; remove it`],
  "a right-to-left override": [
    `p.env:2:17: directive sm121-proof: contains invisible format character U+202E; remove it`,
  ],
};
/** # sm121-recipe: x<payload> as the first line */
const IN_RECIPE: Record<string, string[]> = {
  "command substitution": [`p.env:1:17: directive sm121-recipe: \`x$(id)\` is not a recipe name; ${NAME}`, MISSING],
  backticks: [`p.env:1:17: directive sm121-recipe: \`x\`id\`\` is not a recipe name; ${NAME}`, MISSING],
  "a semicolon": [`p.env:1:17: directive sm121-recipe: \`x;id\` is not a recipe name; ${NAME}`, MISSING],
  "&&": [`p.env:1:17: directive sm121-recipe: \`x&&id\` is not a recipe name; ${NAME}`, MISSING],
  "a pipe": [`p.env:1:17: directive sm121-recipe: \`x|id\` is not a recipe name; ${NAME}`, MISSING],
  "a newline": [`p.env:2:1: ${NOT_KV}`],
  "a carriage return": [`p.env:1:18: directive sm121-recipe: contains a carriage return; remove it`, MISSING],
  NUL: [`p.env:1:18: directive sm121-recipe: contains control character U+0000; remove it`, MISSING],
  "a single quote": [`p.env:1:17: directive sm121-recipe: \`x'id\` is not a recipe name; ${NAME}`, MISSING],
  "a double quote": [`p.env:1:17: directive sm121-recipe: \`x"id\` is not a recipe name; ${NAME}`, MISSING],
  "${IFS}": [`p.env:1:17: directive sm121-recipe: \`x\${IFS}id\` is not a recipe name; ${NAME}`, MISSING],
  "a glob": [`p.env:1:17: directive sm121-recipe: \`x*\` is not a recipe name; ${NAME}`, MISSING],
  "a space": [`p.env:1:17: directive sm121-recipe: \`x id\` is not a recipe name; ${NAME}`, MISSING],
  "an ESC sequence": [`p.env:1:18: directive sm121-recipe: contains control character U+001b; remove it`, MISSING],
  "a right-to-left override": [
    `p.env:1:18: directive sm121-recipe: contains invisible format character U+202E; remove it`,
    MISSING,
  ],
};

describe("sm121-mkdir refuses every payload", () => {
  it.each(PAYLOADS)("%s", (title, payload) => {
    expect(rejected(() => parse(`# sm121-mkdir: /srv/x${payload.slice(1)}\n`), "p.env")).toEqual(IN_MKDIR[title]);
  });
});

describe("sm121-recipe refuses every payload", () => {
  it.each(PAYLOADS.filter(([title]) => title in IN_RECIPE))("%s", (title, payload) => {
    expect(rejected(() => parse(`# sm121-recipe: x${payload.slice(1)}\n`, false), "p.env")).toEqual(IN_RECIPE[title]);
  });
});

describe.each(["proof", "client", "description"])("sm121-%s is free text", (name) => {
  const col = 15 + name.length - "proof".length;
  it.each(LINE_BREAKERS)("refuses %s", (title, payload) => {
    const expected = (IN_PROOF[title] ?? []).map((m) =>
      m.replace("sm121-proof", `sm121-${name}`).replace(":2:17:", `:2:${col + 2}:`),
    );
    expect(rejected(() => parse(`# sm121-${name}: x${payload.slice(1)}\n`), "p.env")).toEqual(expected);
  });
  it("keeps shell metacharacters literally (they are quoted when rendered)", () => {
    const text =
      "x" +
      PAYLOADS.filter((p) => !LINE_BREAKERS.includes(p))
        .map(([, p]) => p.slice(1))
        .join(" ");
    const key = name === "proof" ? "proofs" : name === "client" ? "clients" : "description";
    const got = parse(`# sm121-${name}: ${text}\n`).directives[key];
    expect(Array.isArray(got) ? got : [got]).toEqual([text]);
  });
});

describe("other hostile directives", () => {
  type Case = [title: string, body: string, messages: string[]];
  const cases: Case[] = [
    [
      "a mkdir that climbs out with ..",
      "# sm121-mkdir: /srv/cache/../../etc\n",
      ['p.env:2:27: directive sm121-mkdir: `/srv/cache/../../etc` has a ".." segment; give the directory without ..'],
    ],
    [
      "a mkdir that climbs out of its variable",
      "# sm121-mkdir: {{cache}}/../..\n",
      ['p.env:2:26: directive sm121-mkdir: `{{cache}}/../..` has a ".." segment; give the directory without ..'],
    ],
    [
      "a relative mkdir",
      "# sm121-mkdir: triton\n",
      [
        "p.env:2:16: directive sm121-mkdir: `triton` is not an absolute path; give an absolute path on the node, " +
          "or start with a {{variable}}",
      ],
    ],
    [
      "a mkdir that is a flag",
      "# sm121-mkdir: -p\n",
      [
        "p.env:2:16: directive sm121-mkdir: `-p` is not an absolute path; give an absolute path on the node, " +
          "or start with a {{variable}}",
      ],
    ],
    [
      "a mkdir under ~root",
      "# sm121-mkdir: ~root/x\n",
      [`p.env:2:16: directive sm121-mkdir: contains \`~\` outside double quotes; ${UNQUOTED}`],
    ],
    [
      "a malformed placeholder in mkdir",
      "# sm121-mkdir: {{ cache }}\n",
      [
        "p.env:2:16: directive sm121-mkdir: has a malformed placeholder; write a variable as {{name}} (letters, " +
          "digits and _)",
      ],
    ],
    [
      "a status that is a command",
      "# sm121-status: $(reboot)\n",
      ["p.env:2:17: directive sm121-status: `$(reboot)` is not a status; use stable or experimental"],
    ],
    [
      "runnable as yes",
      "# sm121-runnable: yes\n",
      [
        "p.env:2:19: directive sm121-runnable: `yes` is not true or false; use true, " +
          "or false for a render-only profile",
      ],
    ],
    [
      "a directive name with a look-alike",
      "# sm121-mkdіr: /x\n",
      [
        "p.env:2:3: directive sm121-mkd: is not a directive; " +
          "did you mean sm121-mkdir? the directives are sm121-recipe, sm121-status, sm121-runnable, " +
          "sm121-description, " +
          "sm121-mkdir, sm121-proof, sm121-client",
      ],
    ],
    [
      "a second recipe line",
      "# sm121-recipe: other\n",
      ["p.env:2:3: directive sm121-recipe: occurs a second time (first on line 1); keep one of them"],
    ],
    [
      "a recipe that climbs out",
      "# pulse-recipe: ..\n",
      ["p.env:2:3: directive pulse-recipe: occurs a second time (first on line 1); keep one of them"],
    ],
  ];
  it.each(cases)("%s", (_, body, messages) => expect(rejected(() => parse(body), "p.env")).toEqual(messages));

  it("refuses .. as the only recipe line", () => {
    expect(rejected(() => parse("# sm121-recipe: ..\n", false), "p.env")).toEqual([
      `p.env:1:17: directive sm121-recipe: \`..\` is not a recipe name; ${NAME}`,
      MISSING,
    ]);
  });
});
