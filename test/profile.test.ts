import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { SpecErrors } from "../src/recipe/errors";
import { NODE_ENV_KEYS } from "../src/recipe/types";
import { FORBIDDEN_KEYS, parseProfile, readProfileFile, SECRET_KEYS } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";

const R = "# sm121-recipe: qwen38-flash\n";
const QWEN38 = path.join(__dirname, "fixtures/profiles/qwen38");

const UNQUOTED =
  "without quotes a value may hold only letters, digits and _ . / : = , @ + % -; put it in double quotes";
const NEVER =
  "a profile value must not contain $, a backtick, a backslash or a double quote: write the literal value, nothing expands it";
const WHY =
  "only -e NAME=VALUE and -v SRC:DST[:ro|rw] pairs are allowed, because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
const MOUNT_FIX = "write -v /absolute/source:/absolute/target, optionally with :ro or :rw";
const WORD_FIX =
  "a word here may hold only letters, digits and _ . / : = , @ + % -, because start.sh splices EXTRA_DOCKER_ARGS unquoted into a generated bash script";
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
        "p.env:2:5: A: the value contains a single quote; single quotes are not part of the profile format; use double quotes",
      ],
    ],
    [
      "a plain key spanning lines",
      'A="x\ny"\n',
      [
        "p.env:2:3: A: has no closing quote on its line; only EXTRA_DOCKER_ARGS and EXTRA_VLLM_ARGS may span lines; close the quote on this line",
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
        "p.env:2:7: A: has text after the closing quote; end the line at the closing quote; put a comment on its own line",
      ],
    ],
    [
      "text after a multi-line closing quote",
      'EXTRA_VLLM_ARGS="\n  --enforce-eager\n" extra\n',
      [
        "p.env:4:3: EXTRA_VLLM_ARGS: has text after the closing quote; end the line at the closing quote; put a comment on its own line",
      ],
    ],
    [
      "a docker flag that is not -e or -v",
      'EXTRA_DOCKER_ARGS="--gpus all"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`--gpus\` is not part of a -e or -v pair: ${WHY}; remove it, or set what it does through a -e or -v pair or a recipe key`,
        `p.env:2:27: EXTRA_DOCKER_ARGS: \`all\` is not part of a -e or -v pair: ${WHY}; remove it, or set what it does through a -e or -v pair or a recipe key`,
      ],
    ],
    [
      "-e glued to its value",
      'EXTRA_DOCKER_ARGS="-eFOO=1"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`-eFOO=1\` is not part of a -e or -v pair: ${WHY}; write -e and its value as two words`,
      ],
    ],
    [
      "long form --volume",
      'EXTRA_DOCKER_ARGS="--volume=/a:/b"\n',
      [
        `p.env:2:20: EXTRA_DOCKER_ARGS: \`--volume=/a:/b\` is not part of a -e or -v pair: ${WHY}; use the short form: -e NAME=VALUE or -v SRC:DST[:ro|rw]`,
      ],
    ],
    [
      "-e without =",
      'EXTRA_DOCKER_ARGS="-e FOO"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e FOO is not NAME=VALUE; write -e NAME=VALUE with a name of letters, digits and _",
      ],
    ],
    [
      "-v without a target",
      'EXTRA_DOCKER_ARGS="-v /a"\n',
      [`p.env:2:23: EXTRA_DOCKER_ARGS: -v /a is not SRC:DST[:ro|rw]; ${MOUNT_FIX}`],
    ],
    [
      "-v with a bad mode",
      'EXTRA_DOCKER_ARGS="-v /a:/b:z"\n',
      ["p.env:2:23: EXTRA_DOCKER_ARGS: -v /a:/b:z has mode `z`; use :ro or :rw, or no mode"],
    ],
    [
      "-v with a relative source",
      'EXTRA_DOCKER_ARGS="-v rel:/b"\n',
      [
        `p.env:2:23: EXTRA_DOCKER_ARGS: -v rel:/b: source rel is not an absolute path; ${MOUNT_FIX}; the source is a path on the node`,
      ],
    ],
    [
      "-v with a relative target",
      'EXTRA_DOCKER_ARGS="-v /a:rel"\n',
      [`p.env:2:23: EXTRA_DOCKER_ARGS: -v /a:rel: target rel is not an absolute path; ${MOUNT_FIX}`],
    ],
    [
      "-e at the end without a value",
      'EXTRA_DOCKER_ARGS="-v /a:/b -e"\n',
      ["p.env:2:29: EXTRA_DOCKER_ARGS: -e has no value; write -e NAME=VALUE"],
    ],
    [
      "a secret in EXTRA_DOCKER_ARGS",
      'EXTRA_DOCKER_ARGS="-e HF_TOKEN=hf_secret123"\n',
      [
        "p.env:2:23: EXTRA_DOCKER_ARGS: -e HF_TOKEN puts a secret into EXTRA_DOCKER_ARGS; remove it; HF_TOKEN belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "a shell metacharacter in a docker word",
      'EXTRA_DOCKER_ARGS="-e A=1;reboot"\n',
      [`p.env:2:26: EXTRA_DOCKER_ARGS: -e A=1;reboot contains \`;\`; ${WORD_FIX}`],
    ],
    [
      "a bad word on a later line of a multi-line value",
      'EXTRA_DOCKER_ARGS="\n  -e A=1\n  -v /x:/y\n  --privileged\n"\n',
      [
        `p.env:5:3: EXTRA_DOCKER_ARGS: \`--privileged\` is not part of a -e or -v pair: ${WHY}; remove it, or set what it does through a -e or -v pair or a recipe key`,
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
        "p.env:2:1: HF_TOKEN: is not allowed in a profile; remove it: HF_TOKEN belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "API_KEY",
      'API_KEY="sk-secret123"\n',
      [
        "p.env:2:1: API_KEY: is not allowed in a profile; remove it: API_KEY belongs in the node .env or a Pulumi secret",
      ],
    ],
    [
      "TP1_CONTAINER_NAME",
      "TP1_CONTAINER_NAME=other\n",
      [
        "p.env:2:1: TP1_CONTAINER_NAME: is not allowed in a profile; remove it: sm121 finds the server by the recipe's container name in the site",
      ],
    ],
    [
      "node key HF_HOME",
      "HF_HOME=/hf\n",
      [
        "p.env:2:1: HF_HOME: is a node key, which a profile cannot set; set it in the site's node env (nodes.<node>.env)",
      ],
    ],
    [
      "node key PORT",
      "PORT=8001\n",
      ["p.env:2:1: PORT: is a node key, which a profile cannot set; set it in the site's node env (nodes.<node>.env)"],
    ],
    [
      "--api-key= in EXTRA_VLLM_ARGS",
      'EXTRA_VLLM_ARGS="--enforce-eager --api-key=sk-secret123"\n',
      [
        "p.env:2:34: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "--api-key on a later line",
      'EXTRA_VLLM_ARGS="\n  --enforce-eager\n  --api-key sk-secret123\n"\n',
      [
        "p.env:4:3: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "--api-k (a prefix vLLM's parser takes for --api-key) in EXTRA_VLLM_ARGS",
      'EXTRA_VLLM_ARGS="--api-k sk-secret123 --api_key=sk-2"\n',
      [
        "p.env:2:18: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
        "p.env:2:39: EXTRA_VLLM_ARGS: --api-key is not allowed in EXTRA_VLLM_ARGS; put the key in the node .env as API_KEY; start.sh passes it to vLLM as --api-key",
      ],
    ],
    [
      "unknown directive close to one",
      "# sm121-mkdirs: /x\n",
      [
        `p.env:2:3: directive sm121-mkdirs: is not a directive; did you mean sm121-mkdir? the directives are ${DIRECTIVES}`,
      ],
    ],
    [
      "misspelt pulse- directive",
      "# pulse-recpie: qwen38-flash\n",
      [
        `p.env:2:3: directive pulse-recpie: is not a directive; did you mean pulse-recipe? the directives are ${DIRECTIVES.replaceAll("sm121-", "pulse-")}`,
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
        "p.env:2:16: directive sm121-mkdir: `cache/x` is not an absolute path; give an absolute path on the node, or start with a {{variable}}",
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
      "p.env:1:1: directive sm121-recipe: is missing; add `# sm121-recipe: <recipe>` with the recipe that the profile is for",
    ]);
  });

  it("rejects a file name that is not a profile name", () => {
    expect(messages(() => parseProfile("dir/bad name.env", R))).toEqual([
      "dir/bad name.env:1:1: profile name: `bad name` (the file name) is not a profile name; name the file with letters, digits, . _ and -, e.g. best.env",
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

describe("parseProfile: valid profiles", () => {
  const entry = (text: string): { key: string; value: string; quoted: boolean } => {
    const e = parseProfile("p.env", R + text).entries[0];
    if (e === undefined) throw new Error("no entry");
    return { key: e.key, value: e.value, quoted: e.quoted };
  };
  const cases: Array<[string, string, { key: string; value: string; quoted: boolean }]> = [
    ["every unquoted character", "A=aZ9_./:=,@+%-\n", { key: "A", value: "aZ9_./:=,@+%-", quoted: false }],
    ["an empty value", "A=\n", { key: "A", value: "", quoted: false }],
    [
      "double quotes with spaces and a single quote",
      'A="it\'s a {b} (c) & d"\n',
      { key: "A", value: "it's a {b} (c) & d", quoted: true },
    ],
    ["a placeholder without quotes", "A={{tritonCache}}/x\n", { key: "A", value: "{{tritonCache}}/x", quoted: false }],
    ["trailing white space after the closing quote", 'A="x"  \n', { key: "A", value: "x", quoted: true }],
    [
      "a multi-line value joined with single spaces",
      'EXTRA_VLLM_ARGS="--a\n    --b   1\n\n  --c"\n',
      { key: "EXTRA_VLLM_ARGS", value: "--a --b 1 --c", quoted: true },
    ],
    [
      "docker pairs over lines, with a placeholder source",
      'EXTRA_DOCKER_ARGS="\n  -e X=1\n  -v {{tritonCache}}:/triton-cache\n  -v /a:/b:ro\n"\n',
      { key: "EXTRA_DOCKER_ARGS", value: "-e X=1 -v {{tritonCache}}:/triton-cache -v /a:/b:ro", quoted: true },
    ],
    [
      "an -e value that is empty",
      'EXTRA_DOCKER_ARGS="-e X="\n',
      { key: "EXTRA_DOCKER_ARGS", value: "-e X=", quoted: true },
    ],
  ];
  it.each(cases)("%s", (_name, text, expected) => {
    expect(entry(text)).toEqual(expected);
  });

  it("reads sm121- and pulse- directives with their defaults", () => {
    const p = parseProfile("dir/x.env", "# pulse-recipe: r1\n# some comment\n  # indented comment\nA=1\n");
    expect(p.name).toBe("x");
    expect(p.file).toBe("dir/x.env");
    expect(p.directives).toEqual({
      recipe: "r1",
      status: "stable",
      runnable: true,
      description: "",
      mkdirs: [],
      proofs: [],
      clients: [],
    });
    expect(p.entries.map((e) => [e.key, e.line, e.col])).toEqual([["A", 4, 1]]);
  });

  it("reads every directive, the repeatable ones in order", () => {
    const text = [
      "# sm121-recipe: qwen38-flash",
      "# sm121-status: experimental",
      "# pulse-runnable: false",
      "# sm121-description:   two words  ",
      "# sm121-mkdir: {{tritonCache}}",
      "# pulse-mkdir: /tmp/x",
      "# pulse-proof: a: b",
      "# sm121-proof: $not expanded",
      "# sm121-client: send X-Request-Id: cap-<row>",
      "",
    ].join("\n");
    const p = parseProfile("p.env", text);
    expect(p.directives).toEqual({
      recipe: "qwen38-flash",
      status: "experimental",
      runnable: false,
      description: "two words",
      mkdirs: ["{{tritonCache}}", "/tmp/x"],
      proofs: ["a: b", "$not expanded"],
      clients: ["send X-Request-Id: cap-<row>"],
    });
    expect(p.directiveList.map((d) => [d.prefix, d.name, d.line, d.valueCol])).toEqual([
      ["sm121", "recipe", 1, 17],
      ["sm121", "status", 2, 17],
      ["pulse", "runnable", 3, 19],
      ["sm121", "description", 4, 24],
      ["sm121", "mkdir", 5, 16],
      ["pulse", "mkdir", 6, 16],
      ["pulse", "proof", 7, 16],
      ["sm121", "proof", 8, 16],
      ["sm121", "client", 9, 17],
    ]);
  });

  it("exports the key lists of seed 001", () => {
    expect(NODE_ENV_KEYS).toEqual(["HF_HOME", "BIND", "PORT", "REQUIRE_IDLE_GPU"]);
    expect(FORBIDDEN_KEYS).toEqual(["HF_TOKEN", "API_KEY", "TP1_CONTAINER_NAME"]);
    expect(SECRET_KEYS).toEqual(["HF_TOKEN", "API_KEY"]);
  });
});

describe("the shipped qwen38-flash profiles", () => {
  const read = (name: string) =>
    readProfileFile(path.join(QWEN38, `${name}.env`), `recipes/qwen38-flash/profiles/${name}.env`);

  it("best: MTP K=6, FP8 draft head, 524288 context, drop_caches relief", () => {
    const p = read("best");
    const keys = Object.fromEntries(p.entries.map((e) => [e.key, e.value]));
    expect(p.name).toBe("best");
    expect(p.file).toBe("recipes/qwen38-flash/profiles/best.env");
    expect(p.directives.recipe).toBe("qwen38-flash");
    expect(keys).toMatchObject({
      NUM_SPECULATIVE_TOKENS: "6",
      MTP_DRAFT_DTYPE: "fp8_rowwise",
      MAX_MODEL_LEN: "524288",
      MEMWATCH_RELIEF: "drop_caches",
    });
    expect(p.directives.mkdirs).toEqual(["{{tritonCache}}"]);
    expect(p.directives.proofs).toContain("MTP draft head: FP8 rowwise copy engaged");
  });

  it("datagen: 8 sequences, 262144 context, the stock MTP head", () => {
    const keys = Object.fromEntries(read("datagen").entries.map((e) => [e.key, e.value]));
    expect(keys).toMatchObject({
      MAX_NUM_SEQS: "8",
      MAX_MODEL_LEN: "262144",
      MTP_DRAFT_DTYPE: "auto",
      MTP_SHARD: "",
      MEMWATCH_RELIEF: "drop_caches",
    });
  });

  it("capture: hidden-state capture with a client note", () => {
    const p = read("capture");
    const keys = Object.fromEntries(p.entries.map((e) => [e.key, e.value]));
    expect(keys).toMatchObject({ MTP_CAPTURE_HIDDEN: "1", MEMWATCH_RELIEF: "drop_caches" });
    expect(p.directives.clients).toEqual([
      "each request needs a unique cache_salt and the header X-Request-Id: cap-<row>",
    ]);
  });

  it("tp2: render-only and experimental", () => {
    const p = read("tp2");
    expect(p.directives.runnable).toBe(false);
    expect(p.directives.status).toBe("experimental");
    expect(p.entries.find((e) => e.key === "TENSOR_PARALLEL_SIZE")?.value).toBe("2");
  });

  it("all four hold the same key set (a profile is complete, not a list of changes)", () => {
    const sets = ["best", "datagen", "capture", "tp2"].map((n) =>
      read(n)
        .entries.map((e) => e.key)
        .filter((k) => k !== "TENSOR_PARALLEL_SIZE" && k !== "MTP_CAPTURE_DIR")
        .sort(),
    );
    for (const s of sets) expect(s).toEqual(sets[0]);
  });

  it("readProfileFile names a missing file", () => {
    expect(messages(() => readProfileFile(path.join(QWEN38, "nope.env"), "profiles/nope.env"))).toEqual([
      "profiles/nope.env:1:1: cannot read the profile (ENOENT); check the path",
    ]);
  });
});
