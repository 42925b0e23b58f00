/**
 * Invalid recipes, part 1: TOML syntax, unknown keys, wrong types, missing fields, bad values.
 * Every case asserts the exact message list (file:line:col: field: problem; fix).
 */
import { describe, expect, it } from "vitest";
import { SpecError } from "../src/recipe/errors";
import { parseRecipe } from "../src/engines/recipes";
import { errorsOf } from "./helpers/spec";

const F = "recipes/x.toml";
/** A valid vLLM recipe of four lines; cases append from line 5. */
const BASE = [
  'engine = "vllm"',
  'model = "Qwen/Qwen3-8B"',
  'image = "nvcr.io/nvidia/vllm:26.01-py3"',
  "port = 8000",
  "",
].join("\n");

const bad = (text: string): string[] => errorsOf(() => parseRecipe(F, text));

type Case = [title: string, text: string, message: string];

describe("TOML syntax errors point at the spot", () => {
  const cases: Case[] = [
    ["a key without a value", "model =\n", `${F}:1:8: TOML syntax: invalid value; fix the syntax at this spot`],
    [
      "two values on one line",
      "port = 80 00\n",
      `${F}:1:11: TOML syntax: each key-value declaration must be followed by an end-of-line; ` +
        "fix the syntax at this spot",
    ],
    [
      "a key defined twice",
      'engine = "vllm"\nengine = "sglang"\n',
      `${F}:2:1: TOML syntax: trying to redefine an already defined table or value; fix the syntax at this spot`,
    ],
    [
      "an unclosed table header",
      'engine = "vllm"\n[readiness\n',
      `${F}:2:11: TOML syntax: illegal character in key; fix the syntax at this spot`,
    ],
    [
      "an unclosed string",
      'model = "a\n',
      `${F}:1:11: TOML syntax: control characters are not allowed in strings; fix the syntax at this spot`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("is a SpecError with the parts as fields", () => {
    const e = (() => {
      try {
        parseRecipe(F, "model =\n");
      } catch (x) {
        return x;
      }
      return undefined;
    })();
    expect(e).toBeInstanceOf(SpecError);
    expect(e).toMatchObject({ file: F, line: 1, col: 8, field: "", fix: { key: "spec.syntaxFix" } });
  });
});

describe("unknown keys say what was meant", () => {
  const cases: Case[] = [
    ["a top-level typo", `${BASE}modle = "x"\n`, `${F}:5:1: modle: unknown key; did you mean model?`],
    [
      "a word like no key",
      `${BASE}zzzzzzzz = 1\n`,
      `${F}:5:1: zzzzzzzz: unknown key; remove it (known keys: name, engine, deploy, model, served_model_name, ` +
        "image, engine_version, entrypoint, tp, port, args, env, mounts, hooks, readiness, dgpp, profiles_dir, " +
        "rollback, memory, gate)",
    ],
    [
      "a readiness typo",
      `${BASE}[readiness]\ntimeout = 5\n`,
      `${F}:6:1: readiness.timeout: unknown key; did you mean timeout_s?`,
    ],
    [
      "an unknown hook",
      `${BASE}[hooks]\nbefore = []\n`,
      `${F}:6:1: hooks.before: unknown key; remove it (known keys: before_serve, after_stop)`,
    ],
    [
      "a [dgpp] typo",
      'engine = "dgpp"\ndeploy = "native"\n[dgpp]\ndri = "/opt/dgpp"\n',
      `${F}:4:1: dgpp.dri: unknown key; did you mean dir?`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports every unknown key at once", () => {
    expect(bad(`${BASE}modle = "x"\nimgae = "y"\n`)).toEqual([
      `${F}:5:1: modle: unknown key; did you mean model?`,
      `${F}:6:1: imgae: unknown key; did you mean image?`,
    ]);
  });
});

describe("wrong types name the expected type and what was written", () => {
  const cases: Case[] = [
    [
      "port as a string",
      BASE.replace("port = 8000", 'port = "8000"'),
      `${F}:4:1: port: expected number, got string; write a number`,
    ],
    ["tp as a string", `${BASE}tp = "2"\n`, `${F}:5:1: tp: expected number, got string; write a number`],
    [
      "args as a string",
      `${BASE}args = "--enforce-eager"\n`,
      `${F}:5:1: args: expected array, got string; write an array`,
    ],
    [
      "an argument as a number",
      `${BASE}args = [1]\n`,
      `${F}:5:9: args[0]: expected string, got number; write a string`,
    ],
    [
      "readiness.timeout_s as a string",
      `${BASE}[readiness]\ntimeout_s = "60"\n`,
      `${F}:6:1: readiness.timeout_s: expected number, got string; write a number`,
    ],
    [
      "rollback not off or auto",
      `${BASE}rollback = "yes"\n`,
      `${F}:5:1: rollback: "yes" is not allowed; use one of "off", "auto"`,
    ],
    [
      "an unknown deploy target",
      `${BASE}deploy = "k8s"\n`,
      `${F}:5:1: deploy: "k8s" is not allowed; use one of "docker", "tmux", "native", "script"`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));
});

describe("missing fields", () => {
  const cases: Case[] = [
    [
      "no model",
      'engine = "vllm"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n',
      `${F}:1:1: model: is required; add model = "<org>/<name>" (the Hugging Face repo id)`,
    ],
    [
      "no image for docker",
      'engine = "vllm"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n',
      `${F}:1:1: image: deploy = "docker" needs an image; add image = "<registry>/<name>:<tag>"`,
    ],
    [
      "no port for vllm",
      'engine = "vllm"\nmodel = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\n',
      `${F}:1:1: port: is required for this engine; add port = 8000 (or another free port)`,
    ],
    [
      "no port for sglang on tmux",
      'engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\n',
      `${F}:1:1: port: is required for this engine; add port = 8000 (or another free port)`,
    ],
    [
      "no [dgpp] block on dgpp",
      'engine = "dgpp"\ndeploy = "native"\nmodel = "Qwen/Q"\n',
      `${F}:1:1: dgpp: a dgpp recipe needs a [dgpp] block; add [dgpp] with dir (and repo + rev to provision)`,
    ],
    [
      "no profiles_dir on a script recipe",
      'deploy = "script"\n',
      `${F}:1:1: profiles_dir: deploy = "script" needs its profiles; add profiles_dir = "<recipe>/profiles"`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports model, image and port at once", () => {
    expect(bad('engine = "vllm"\n')).toEqual([
      `${F}:1:1: port: is required for this engine; add port = 8000 (or another free port)`,
      `${F}:1:1: model: is required; add model = "<org>/<name>" (the Hugging Face repo id)`,
      `${F}:1:1: image: deploy = "docker" needs an image; add image = "<registry>/<name>:<tag>"`,
    ]);
  });
});

describe("values out of range or of the wrong form", () => {
  const cases: Case[] = [
    ["tp 0", `${BASE}tp = 0\n`, `${F}:5:1: tp: is below 1; use at least 1`],
    [
      "a privileged port",
      BASE.replace("port = 8000", "port = 80"),
      `${F}:4:1: port: must be 1024 or above; pick an unprivileged port such as 8000`,
    ],
    [
      "a name with capitals",
      `${BASE}name = "Bad_Name"\n`,
      `${F}:5:1: name: must be lower-case letters, digits and -, at most 48; rename it, e.g. qwen3-8b-tp2`,
    ],
    [
      "a served name with a space",
      `${BASE}served_model_name = "a b"\n`,
      `${F}:5:1: served_model_name: may contain only letters, digits and . _ / : -; rename it`,
    ],
    [
      "an engine name with capitals",
      'engine = "Vllm"\n',
      `${F}:1:1: engine: must be an engine name; use one of vllm, sglang, gr8, dgpp`,
    ],
    [
      "a zero readiness timeout",
      `${BASE}[readiness]\ntimeout_s = 0\n`,
      `${F}:6:1: readiness.timeout_s: is below 1; use at least 1`,
    ],
    [
      "an empty proof",
      `${BASE}[readiness]\nproofs = [""]\n`,
      `${F}:6:11: readiness.proofs[0]: is empty; use at least 1`,
    ],
    ["an empty entrypoint", `${BASE}entrypoint = []\n`, `${F}:5:1: entrypoint: is empty; use at least 1`],
    [
      "an argument with a newline",
      `${BASE}args = ["a\\nb"]\n`,
      `${F}:5:9: args[0]: the argument contains a newline or NUL; write it on one line`,
    ],
    [
      "a privileged dgpp http_port",
      'engine = "dgpp"\ndeploy = "native"\n[dgpp]\nhttp_port = 80\n',
      `${F}:4:1: dgpp.http_port: is below 1024; use at least 1024`,
    ],
    [
      "a rev with a space",
      'engine = "dgpp"\ndeploy = "native"\n[dgpp]\nrepo = "https://x/y.git"\nrev = "bad rev"\n',
      `${F}:5:1: dgpp.rev: is not a commit or tag; write e.g. 3f2d7d7 or v0.4.1`,
    ],
    [
      "an env key in lower case",
      `${BASE}[env]\nfoo = "x"\n`,
      `${F}:6:1: env.foo: env keys are upper-case shell names; rename it`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));
});
