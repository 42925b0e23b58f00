/**
 * Oversized inputs: a 2 MB recipe, a 200 KB key, 10,000-element arrays, 100,000-line profiles and
 * docker-args files, sites with hundreds of bad entries. Each is accepted or refused with the right
 * messages, and a flood of errors stops at MAX_ERRORS with one message saying so: the work spent
 * on errors does not grow with the input (the same messages at two sizes). How fast any of this
 * runs is for `npm run bench`; a test on a shared machine asserts no time.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../../src/engines/recipes";
import { parseSite } from "../../src/recipe/site";
import { renderSite } from "../../src/render/deployment";
import { parseDockerArgs } from "../../src/render/overlay";
import { parseProfile } from "../../src/render/profile";
import { rejected } from "./helpers";

const F = "recipes/x.toml";
const S = "Pulumi.s.yaml";
const BASE = 'engine = "vllm"\nmodel = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n';
const many = (n: number, f: (i: number) => string) => Array.from({ length: n }, (_, i) => f(i)).join("\n");
const more = (file: string, at: string) =>
  `${file}:${at}: more than 100 errors; the first 100 are listed; fix them and run again`;

/** The rejection's messages, or [] when `fn` accepted the input. `fn` runs once. */
function outcome(fn: () => unknown, file?: string): string[] {
  try {
    fn();
  } catch (e) {
    return rejected(() => {
      throw e;
    }, file);
  }
  return [];
}

describe("recipes", () => {
  it("a 2 MB comment is read", () => {
    expect(outcome(() => parseRecipe(F, `${BASE}# ${"x".repeat(2 << 20)}\n`))).toEqual([]);
  });

  it("2 MB of junk on one line", () => {
    expect(outcome(() => parseRecipe(F, "x".repeat(2 << 20)), F)).toEqual([
      `${F}:1:1: TOML syntax: incomplete key-value: cannot find end of key; fix the syntax at this spot`,
    ]);
  });

  it("a 2 MB served name", () => {
    expect(outcome(() => parseRecipe(F, `${BASE}served_model_name = "${"q".repeat(2 << 20)}"\n`), F)).toEqual([
      `${F}:5:1: served_model_name: may contain only letters, digits and . _ / : -; rename it`,
    ]);
  });

  it("a 200 KB key name (too long for a pattern, cut in the message)", () => {
    expect(outcome(() => parseRecipe(F, `${BASE}${"k".repeat(200_000)} = 1\n`), F)).toEqual([
      `${F}:1:1: ${"k".repeat(61)}...: unknown key; remove it (known keys: name, engine, deploy, model, ` +
        `served_model_name, image, engine_version, entrypoint, tp, port, args, env, mounts, hooks, readiness, dgpp, ` +
        `profiles_dir, rollback, memory, gate)`,
    ]);
  });

  it("10,000 arguments are read", () => {
    let n = 0;
    expect(
      outcome(
        () =>
          (n = parseRecipe(
            F,
            `${BASE}args = [\n${many(10_000, (i) => (i % 2 === 0 ? '  "--max-model-len",' : `  "${i}",`))}\n]\n`,
          ).args.length),
      ),
    ).toEqual([]);
    expect(n).toBe(10_000);
  });

  it("10,000 arguments with a NUL each", () => {
    const m = outcome(() => parseRecipe(F, `${BASE}args = [\n${many(10_000, () => '  "\\u0000",')}\n]\n`), F);
    expect([m.length, m[0], m[99], m[100]]).toEqual([
      101,
      `${F}:6:3: args[0]: the argument contains a newline or NUL; write it on one line`,
      `${F}:105:3: args[99]: the argument contains a newline or NUL; write it on one line`,
      more(F, "106:3"),
    ]);
  });

  it("10,000 copies of a flag that sm121 sets", () => {
    const m = outcome(() => parseRecipe(F, `${BASE}args = [\n${many(10_000, () => '  "--port",')}\n]\n`), F);
    expect([m.length, m[0], m[100]]).toEqual([
      101,
      `${F}:6:3: args[0]: --port is set by sm121; remove it (set \`port\` instead)`,
      more(F, "106:3"),
    ]);
  });

  it("5,000 unknown keys: the same 101 messages as 500", () => {
    const m = outcome(() => parseRecipe(F, `${BASE}${many(5_000, (i) => `k${i} = 1`)}\n`), F);
    expect([m.length, m[100]]).toEqual([101, more(F, "105:1")]);
    expect(outcome(() => parseRecipe(F, `${BASE}${many(500, (i) => `k${i} = 1`)}\n`), F)).toEqual(m);
  });
});

describe("profiles and docker-args files", () => {
  const R = "# sm121-recipe: scripted\n";
  it("100,000 keys are read", () => {
    let n = 0;
    expect(
      outcome(() => (n = parseProfile("p.env", `${R}${many(100_000, (i) => `K${i}=${i}`)}\n`).entries.length)),
    ).toEqual([]);
    expect(n).toBe(100_000);
  });

  it("100,000 lines with `$` each", () => {
    const m = outcome(() => parseProfile("p.env", `${R}${many(100_000, (i) => `K${i}=$x`)}\n`), "p.env");
    expect([m.length, m[0], m[100]]).toEqual([
      101,
      "p.env:2:4: K0: the value contains `$`; a profile value must not contain $, a backtick, " +
        "a backslash or a double quote: write the literal value, nothing expands it",
      more("p.env", "102:6"),
    ]);
  });

  it("100,000 status directives", () => {
    const m = outcome(() => parseProfile("p.env", `${R}${many(100_000, () => "# sm121-status: stable")}\n`), "p.env");
    expect([m.length, m[0], m[100]]).toEqual([
      101,
      "p.env:3:3: directive sm121-status: occurs a second time (first on line 2); keep one of them",
      more("p.env", "103:3"),
    ]);
  });

  it("an EXTRA_DOCKER_ARGS of 100,000 lines is read", () => {
    expect(
      outcome(() => parseProfile("p.env", `${R}EXTRA_DOCKER_ARGS="\n${many(100_000, (i) => `-e A${i}=1`)}\n"\n`)),
    ).toEqual([]);
  });

  it("a docker-args.txt of 100,000 docker flags", () => {
    const m = outcome(
      () =>
        parseDockerArgs(
          "d.txt",
          many(100_000, () => "--privileged"),
        ),
      "d.txt",
    );
    expect([m.length, m[100]]).toEqual([101, more("d.txt", "101:1")]);
  });
});

describe("sites", () => {
  const nodes = (n: number, ip: string) =>
    `config:\n  sm121:nodes:\n${many(n, (i) => `    n${i}: { host: local, ip: ${ip} }`)}\n`;
  it("300 nodes with a bad ip: the same 101 messages as 3,000", () => {
    const m = outcome(() => parseSite(S, "s", nodes(300, "203.0.113.300")), S);
    expect(outcome(() => parseSite(S, "s", nodes(3_000, "203.0.113.300")), S)).toEqual(m);
    expect([m.length, m[0], m[100]]).toEqual([
      101,
      `${S}:3:24: sm121:nodes.n0.ip: is not an IPv4 address; write the node's address on the cluster network, e.g. ` +
        `203.0.113.12`,
      more(S, "103:26"),
    ]);
  });

  it("400 deployments on a node that does not exist", () => {
    const text =
      `${nodes(1, "203.0.113.1")}  ` +
      `sm121:deployments:\n${many(400, (i) => `    - { recipe: r${i}, nodes: [nope] }`)}\n`;
    const m = outcome(() => parseSite(S, "s", text), S);
    expect([m.length, m[100]]).toEqual([101, more(S, "105:31")]);
  });

  it("300 deployments of recipes that do not exist (renderSite)", () => {
    const text =
      `${nodes(300, "203.0.113.1")}  ` +
      `sm121:deployments:\n${many(300, (i) => `    - { recipe: r${i}, nodes: [n${i}] }`)}\n`;
    const site = parseSite(S, "s", text);
    const m = outcome(() => renderSite(site, new Map(), { root: "/nonexistent" }), S);
    expect([m.length, m[0], m[100]]).toEqual([
      101,
      `${S}:304:9: sm121:deployments[0].recipe: recipe "r0" is not in recipes/; use one of  or add recipes/r0.toml`,
      more(S, "404:9"),
    ]);
  });

  it("20,000 nested flow sequences", () => {
    // The column is where the parser's stack ran out, which depends on the stack size.
    const m = outcome(
      () => parseSite(S, "s", `config:\n  sm121:nodes: ${"[".repeat(20_000)}${"]".repeat(20_000)}\n`),
      S,
    );
    expect(m).toHaveLength(1);
    expect(m[0]).toMatch(
      /^Pulumi\.s\.yaml:2:\d+: YAML syntax: Maximum call stack size exceeded; fix the syntax at this spot$/,
    );
  });

  it("12,000 nodes (the YAML parser's time grows with the square of a map's size)", () => {
    const text = `${nodes(12_000, "203.0.113.1")}    last: { host: local, ip: 203.0.113.256 }\n`;
    expect(outcome(() => parseSite(S, "s", text), S)).toEqual([
      `${S}:10001:1: the stack config has 12004 lines; sm121 reads at most 10000 lines and 1 MB; ` +
        `keep the site to its nodes and deployments`,
    ]);
  });

  it("a 2 MB site (a comment)", () => {
    const text = `${nodes(1, "203.0.113.1")}# ${"x".repeat(2 << 20)}\n`;
    expect(outcome(() => parseSite(S, "s", text), S)).toEqual([
      `${S}:1:1: the stack config has 2.0 MB; sm121 reads at most 10000 lines and 1 MB; ` +
        `keep the site to its nodes and deployments`,
    ]);
  });

  it("a 1.5 MB site on one line", () => {
    expect(outcome(() => parseSite(S, "s", `config: {${" ".repeat(1_500_000)}}\n`), S)).toEqual([
      `${S}:1:1: the stack config has 1.4 MB; sm121 reads at most 10000 lines and 1 MB; ` +
        `keep the site to its nodes and deployments`,
    ]);
  });

  it("a site of 1,990 lines with one mistake at its end", () => {
    const text = `${nodes(1_986, "203.0.113.1")}    last: { host: local, ip: 203.0.113.256 }\n`;
    expect(outcome(() => parseSite(S, "s", text), S)).toEqual([
      `${S}:1989:26: sm121:nodes.last.ip: is not an IPv4 address; write the node's address on the cluster network, ` +
        `e.g. 203.0.113.12`,
    ]);
  });
});
