/**
 * One way to write a secret for a shell, one way to read it back: every hostile value written by
 * `assignment` is read back byte for byte by bash sourcing the file (what a script recipe's
 * start.sh does), by sm121's node-side reader `sm121_get`, and by sm121's own .env reader; no
 * form of it runs anything. A line the reader cannot take as a literal is refused, not guessed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseEnvFile } from "../src/render/envreader";
import { ASSIGNMENT_READER, assignment } from "../src/text/assign";
import { readApiKeyLines } from "../src/render/apikey";
import { exportSecrets, secretsEnvPath, secretsEnvScript } from "../src/targets/secretsenv";
import { quote } from "../src/text/shell";

const dir = mkdtempSync(join(tmpdir(), "sm121-assign-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const mark = join(dir, "ran");

const HOSTILE_VALUES: Record<string, string> = {
  "command substitution": `$(touch ${mark})`,
  backticks: `\`touch ${mark}\``,
  "both quotes": `it's "quoted" '' "" '`,
  "breaking out of single quotes": `x'$(touch ${mark})'\`touch ${mark}\`'`,
  backslash: "back\\slash \\$HOME \\n \\\\ trailing\\",
  spaces: "  with  spaces\tand a tab  ",
  "leading dash": "-leading-dash --api-key",
  "non-ASCII": "ключ-ü-€-🔑",
  "4 KiB": `${"x'\"$`\\ ".repeat(700)}`.slice(0, 4096),
  "plain subset": "hf_Plain.Token-1:2=3,4@5+6%",
  empty: "",
  "a single quote": "'",
  "an escaped pair": "'\\''",
};

/** What one script of a batch printed, and whether a file appeared at `mark` while it ran. */
interface Ran {
  out: string;
  ran: boolean;
}

/**
 * Runs one bash on `scripts`, each in a subshell of its own after `prelude`, with its stdout, stderr and
 * exit status in files of its own; a file at `mark` after a script is its doing (and is removed).
 * The bash's stdin is not a pipe: Node's pipes are socket pairs, and a bash whose stdin is a socket and
 * whose SHLVL is unset takes itself to be run by sshd and reads ~/.bashrc, the machine's, not the test's.
 */
function bashEach(scripts: string[], prelude = ""): Ran[] {
  const run = mkdtempSync(join(dir, "run-"));
  const at = (i: number, ext: string) => quote(join(run, `${i}.${ext}`));
  const whole = [
    prelude,
    ...scripts.map(
      (script, i) =>
        `(\n${script}\n) > ${at(i, "out")} 2> ${at(i, "err")}; echo "$?" > ${at(i, "rc")}\n` +
        `if [ -e ${quote(mark)} ]; then rm -f ${quote(mark)}; : > ${at(i, "ran")}; fi`,
    ),
  ].join("\n");
  const r = spawnSync("bash", ["-c", whole], {
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return scripts.map((_, i) => {
    const file = (ext: string) => join(run, `${i}.${ext}`);
    const status = Number(readFileSync(file("rc"), "utf8"));
    if (status !== 0 && status !== 1 && status !== 2) throw new Error(readFileSync(file("err"), "utf8"));
    return { out: readFileSync(file("out"), "utf8"), ran: existsSync(file("ran")) };
  });
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("assignment and its readers", () => {
  const values = Object.values(HOSTILE_VALUES);
  // Each value in a file of its own, read back by bash sourcing it and by sm121_get: one bash for all.
  let sourced: Ran[] = [];
  let read: Ran[] = [];
  beforeAll(() => {
    const files = values.map((value, i) => {
      const file = join(dir, `secrets-${i}.env`);
      writeFileSync(file, `# a comment\nOTHER="x"\nHF_TOKEN="stale"\n${assignment("HF_TOKEN", value)}\nAFTER=1\n`);
      return file;
    });
    const show = `printf '%s %s' "$rc" "$(printf '%s' "$REPLY" | base64 -w0)"`;
    const runs = bashEach(
      files.flatMap((file) => [
        `set -a; . ${file}; set +a; printf '%s' "$HF_TOKEN" | base64 -w0`,
        `sm121_get ${file} HF_TOKEN; rc=$?; ${show}`,
      ]),
      ASSIGNMENT_READER,
    );
    sourced = runs.filter((_, i) => i % 2 === 0);
    read = runs.filter((_, i) => i % 2 === 1);
  });

  it.each(Object.entries(HOSTILE_VALUES))("%s: written once, read back the same by every reader", (name, value) => {
    const i = Object.keys(HOSTILE_VALUES).indexOf(name);
    expect(sourced[i]).toEqual({ out: b64(value), ran: false });
    expect(read[i]).toEqual({ out: `0 ${b64(value)}`, ran: false });
    expect(parseEnvFile(`${assignment("HF_TOKEN", value)}\n`).secretLines).toEqual([assignment("HF_TOKEN", value)]);
    expect(parseEnvFile(`${assignment("A", value)}\n`).keys).toEqual({ A: value });
    expect(existsSync(mark)).toBe(false);
  });

  it("writes seed 001's double-quoted form whenever the value fits it", () => {
    expect(assignment("HF_TOKEN", "hf_abc 'x'")).toBe(`HF_TOKEN="hf_abc 'x'"`);
    expect(assignment("HF_TOKEN", 'a"b')).toBe(`HF_TOKEN='a"b'`);
    expect(assignment("HF_TOKEN", "a'$b")).toBe(`HF_TOKEN='a'\\''$b'`);
  });

  it("reads the forms people write, and refuses any form a shell would expand", () => {
    const cases: Array<[string, string]> = [
      ["API_KEY=plain-key.1", "0 plain-key.1"],
      ['export API_KEY="sk-1 2"', "0 sk-1 2"],
      ["API_KEY='it'\\''s'", "0 it's"],
      ['API_KEY="$(whoami)"', "2 "],
      ["API_KEY=`whoami`", "2 "],
      ['API_KEY="a\\"b"', "2 "],
      ["API_KEY='open", "2 "],
      ["API_KEY='a'b'", "2 "],
      ["API_KEY=a b", "2 "],
      ["# API_KEY=commented", "1 "],
      ["NOT_API_KEY=x", "1 "],
    ];
    const files = cases.map(([line], i) => {
      const file = join(dir, `case-${i}.env`);
      writeFileSync(file, `${line}\n`);
      return file;
    });
    const runs = bashEach(
      [
        ...files.map((file) => `sm121_get ${file} API_KEY; printf '%s %s' "$?" "$REPLY"`),
        `sm121_get ${join(dir, "none")} API_KEY; printf '%s' "$?"`,
      ],
      ASSIGNMENT_READER,
    );
    cases.forEach(([line, want], i) => expect(runs[i], line).toEqual({ out: want, ran: false }));
    expect(runs[cases.length]).toEqual({ out: "1", ran: false });
    expect(existsSync(mark)).toBe(false);
  });
});

describe("secrets.env: one writer, one reader", () => {
  // Each value written by the writer into a state directory of its own and read back: one bash for all.
  let runs: Ran[] = [];
  beforeAll(() => {
    const show = (v: string) => `printf '%s ' "$(printf '%s' "${v}" | base64 -w0)"`;
    runs = bashEach(
      Object.values(HOSTILE_VALUES).map((value, i) => {
        const state = join(dir, `state-${i}`);
        const secrets = { HF_TOKEN: value, API_KEY: value };
        return [
          "umask 077",
          `mkdir -p ${state}`,
          secretsEnvScript(state, secrets),
          exportSecrets(state),
          show("$HF_TOKEN"),
          show("$API_KEY"),
          show("$VLLM_API_KEY"),
          readApiKeyLines([secretsEnvPath(state)]),
          show("$key"),
        ].join("\n");
      }),
    );
  });

  const what = "%s: what the writer writes, the start and the API-key reader read back";
  it.each(Object.entries(HOSTILE_VALUES))(what, (name, value) => {
    expect(runs[Object.keys(HOSTILE_VALUES).indexOf(name)]).toEqual({ out: `${b64(value)} `.repeat(4), ran: false });
    expect(existsSync(mark)).toBe(false);
  });

  it("is removed by the writer when sm121 holds no secret, and then the reader passes nothing", () => {
    const state = join(dir, "state-none");
    const [run] = bashEach([
      [
        `mkdir -p ${state}`,
        secretsEnvScript(state, { HF_TOKEN: "x" }),
        secretsEnvScript(state, {}),
        `[ -e ${state}/secrets.env ] && echo left`,
        exportSecrets(state),
        'printf "%s" "${HF_TOKEN-unset}"',
      ].join("\n"),
    ]);
    expect(run).toEqual({ out: "unset", ran: false });
  });
});
