/**
 * Every recipe string that can reach a generated script, against every payload of PAYLOADS.
 * Restricted fields (names, paths, images, revs) refuse all of them; free-text fields (args,
 * entrypoint, env values, proofs, hooks) are quoted when rendered, so only line breaks, NUL and
 * invisible characters are refused there, and the rest is accepted exactly as written.
 */
import { describe, expect, it } from "vitest";
import { parseRecipe } from "../../src/engines/recipes";
import { LINE_BREAKERS, PAYLOADS, rejected, tomlStr } from "./helpers";

const F = "recipes/x.toml";
const parse = (text: string) => parseRecipe(F, text);
const lines = (...l: string[]) => `${l.join("\n")}\n`;

const VLLM = ['engine = "vllm"', 'model = "Qwen/Qwen3-8B"', 'image = "nvcr.io/nvidia/vllm:26.01-py3"', "port = 8000"];
/** The vLLM recipe with `key` taken out (a comment keeps the lines), the key under test on line 5. */
const vllmWith = (key: string, value: string) =>
  lines(...VLLM.map((l) => (l.startsWith(`${key} =`) ? `# ${key} is on line 5` : l)), `${key} = ${value}`);
/** repo and rev go together: the other one follows on line 6. */
const PARTNER: Record<string, string> = {
  repo: 'rev = "v0.4.1"',
  rev: 'repo = "https://github.com/HawkBearPig/dgpp.git"',
};
const dgppWith = (key: string, value: string) =>
  lines(
    'engine = "dgpp"',
    'deploy = "native"',
    'model = "Qwen/Qwen3.8-27B-NVFP4"',
    "[dgpp]",
    `${key} = ${value}`,
    PARTNER[key] ?? "",
  );
const scriptWith = (key: string, value: string) =>
  lines('engine = "vllm"', 'deploy = "script"', "# profiles_dir", "# is on line 5", `${key} = ${value}`);

const PATH_RULE = "may contain only letters, digits and ~ @ : / . _ + -; remove spaces, quotes and shell characters";

interface Restricted {
  field: string;
  /** A value the field accepts; each payload is appended to it. */
  valid: string;
  text: (value: string) => string;
  at: string;
  problem: string;
}

const RESTRICTED: Restricted[] = [
  {
    field: "name",
    valid: "qwen3-8b",
    text: (v) => vllmWith("name", v),
    at: "5:1",
    problem: "must be lower-case letters, digits and -, at most 48; rename it, e.g. qwen3-8b-tp2",
  },
  {
    field: "engine",
    valid: "vllm",
    text: (v) => vllmWith("engine", v),
    at: "5:1",
    problem: "must be an engine name; use one of vllm, sglang, gr8, dgpp",
  },
  {
    field: "model",
    valid: "Qwen/Qwen3-8B",
    text: (v) => vllmWith("model", v),
    at: "5:1",
    problem: `model ${PATH_RULE}`,
  },
  {
    field: "served_model_name",
    valid: "qwen3-8b",
    text: (v) => vllmWith("served_model_name", v),
    at: "5:1",
    problem: "may contain only letters, digits and . _ / : -; rename it",
  },
  {
    field: "image",
    valid: "nvcr.io/nvidia/vllm:26.01-py3",
    text: (v) => vllmWith("image", v),
    at: "5:1",
    problem: "is not a docker image reference; write e.g. nvcr.io/nvidia/vllm:26.01-py3",
  },
  {
    field: "dgpp.repo",
    valid: "https://github.com/HawkBearPig/dgpp.git",
    text: (v) => dgppWith("repo", v),
    at: "5:1",
    problem: `repo ${PATH_RULE}`,
  },
  {
    field: "dgpp.rev",
    valid: "v0.4.1",
    text: (v) => dgppWith("rev", v),
    at: "5:1",
    problem: "is not a commit or tag; write e.g. 3f2d7d7 or v0.4.1",
  },
  { field: "dgpp.dir", valid: "~/dgpp", text: (v) => dgppWith("dir", v), at: "5:1", problem: `dir ${PATH_RULE}` },
  {
    field: "dgpp.release",
    valid: "3f2d7d7",
    text: (v) => dgppWith("release", v),
    at: "5:1",
    problem: `release ${PATH_RULE}`,
  },
  {
    field: "dgpp.roce_devices",
    valid: "rocep1s0f0,rocep1s0f1",
    text: (v) => dgppWith("roce_devices", v),
    at: "5:1",
    problem: "is a comma-separated list of RoCE device names; write e.g. rocep1s0f0,rocep1s0f1",
  },
  {
    field: "profiles_dir",
    valid: "x/profiles",
    text: (v) => scriptWith("profiles_dir", v),
    at: "5:1",
    problem: `profiles_dir ${PATH_RULE}`,
  },
  {
    field: "mounts[0]",
    valid: "/data/models:/models",
    text: (v) => vllmWith("mounts", `[${v}]`),
    at: "5:11",
    problem: "is not SRC:DST[:ro|rw] with absolute paths; write e.g. /data/models:/models:ro",
  },
];

describe.each(RESTRICTED)("$field refuses shell metacharacters and line breaks", (f) => {
  it("accepts the plain value (the control case)", () => {
    expect(() => parse(f.text(tomlStr(f.valid)))).not.toThrow();
  });
  it.each(PAYLOADS)("%s", (_title, payload) => {
    const value = f.field === "mounts[0]" ? `/data/models${payload.slice(1)}:/models` : f.valid + payload.slice(1);
    expect(rejected(() => parse(f.text(tomlStr(value))), F)).toEqual([`${F}:${f.at}: ${f.field}: ${f.problem}`]);
  });
});

describe("env keys refuse shell metacharacters and line breaks", () => {
  it.each(PAYLOADS)("%s", (_title, payload, shown) => {
    const key = `NCCL${payload.slice(1)}`;
    const source = tomlStr(key);
    // The key is found where it is written as is; an escaped key points at its [env] table.
    const at = source === `"${key}"` ? "6:1" : "5:1";
    const text = `${lines(...VLLM)}[env]\n${source} = "1"\n`;
    expect(rejected(() => parse(text), F)).toEqual([
      `${F}:${at}: env.NCCL${shown.slice(1)}: env keys are upper-case shell names; rename it`,
    ]);
  });
});

interface FreeText {
  field: string;
  what: string;
  text: (value: string) => string;
  at: string;
  /** Reads the accepted value back from the parsed recipe. */
  read: (r: ReturnType<typeof parse>) => string | undefined;
  /** The value written for a payload; an argument is the value of a real engine option, so it starts with no dash. */
  value?: (payload: string) => string;
}

const FREE: FreeText[] = [
  {
    field: "args[1]",
    what: "the argument",
    text: (v) => lines(...VLLM, `args = ["--chat-template", ${v}]`),
    at: "5:28",
    read: (r) => r.args[1],
    value: (p) => `x${p.slice(1)}`,
  },
  {
    field: "entrypoint[1]",
    what: "the entrypoint element",
    text: (v) => lines(...VLLM, `entrypoint = ["vllm", ${v}]`),
    at: "5:23",
    read: (r) => r.entrypoint?.[1],
  },
  {
    field: "env.A",
    what: "the env value",
    text: (v) => lines(...VLLM, "[env]", `A = ${v}`),
    at: "6:1",
    read: (r) => r.env["A"],
  },
  {
    field: "readiness.proofs[0]",
    what: "the proof text",
    text: (v) => lines(...VLLM, "[readiness]", `proofs = [${v}]`),
    at: "6:11",
    read: (r) => r.readiness.proofs[0],
  },
  {
    field: "hooks.before_serve[0]",
    what: "a hook",
    text: (v) => lines(...VLLM, "[hooks]", `before_serve = [${v}]`),
    at: "6:17",
    read: (r) => r.hooks.beforeServe[0],
  },
  {
    field: "hooks.after_stop[0]",
    what: "a hook",
    text: (v) => lines(...VLLM, "[hooks]", `after_stop = [${v}]`),
    at: "6:15",
    read: (r) => r.hooks.afterStop[0],
  },
];

const BREAKS_LINE = "contains a newline or NUL; write it on one line";
const UNSEEN = "contains a control character or an invisible format character; remove it: the plan would not show it";

describe.each(FREE)("$field (free text) refuses line breaks, NUL and invisible characters", (f) => {
  it.each(LINE_BREAKERS)("%s", (_title, payload) => {
    const problem = /[\n\r\0]/.test(payload) ? BREAKS_LINE : UNSEEN;
    expect(rejected(() => parse(f.text(tomlStr(`--x${payload.slice(1)}`))), F)).toEqual([
      `${F}:${f.at}: ${f.field}: ${f.what} ${problem}`,
    ]);
  });

  it("accepts every shell metacharacter exactly as written (rendering quotes it)", () => {
    for (const [, payload] of PAYLOADS.filter((p) => !LINE_BREAKERS.includes(p))) {
      const value = f.value === undefined ? `--x${payload.slice(1)}` : f.value(payload);
      expect(f.read(parse(f.text(tomlStr(value))))).toBe(value);
    }
  });
});

describe("a hook is operator shell by design", () => {
  it("keeps pipes, substitutions and quotes as the operator wrote them", () => {
    const hook = `sudo -n sysctl -w vm.compaction_proactiveness=0 && echo "$(date)" | tee -a /tmp/'hook log'`;
    expect(parse(lines(...VLLM, "[hooks]", `before_serve = [${tomlStr(hook)}]`)).hooks.beforeServe).toEqual([hook]);
  });

  it("refuses a NUL that bash would drop silently, and an empty hook", () => {
    expect(
      rejected(() => parse(lines(...VLLM, "[hooks]", 'before_serve = ["sysctl -w a=0\\u0000; reboot", ""]')), F),
    ).toEqual([
      `${F}:6:17: hooks.before_serve[0]: a hook ${BREAKS_LINE}`,
      `${F}:6:48: hooks.before_serve[1]: is empty; use at least 1`,
    ]);
  });
});
