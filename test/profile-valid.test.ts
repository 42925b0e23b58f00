/** parseProfile on valid profiles, and the shipped qwen38-flash profiles. */
import * as path from "node:path";
import { describe, expect, it } from "vitest";
import { NODE_ENV_KEYS } from "../src/recipe/types";
import { FORBIDDEN_KEYS, parseProfile, readProfileFile, SECRET_KEYS } from "../src/render/profile";
import { errorsOf as messages } from "./helpers/spec";

const R = "# sm121-recipe: qwen38-flash\n";
const QWEN38 = path.join(__dirname, "fixtures/profiles/qwen38");

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
