/**
 * One way to write a secret for a shell, one way to read it back: every hostile value written by
 * `assignment` is read back byte for byte by bash sourcing the file (what a script recipe's
 * start.sh does), by sm121's node-side reader `sm121_get`, and by sm121's own .env reader; no
 * form of it runs anything. A line the reader cannot take as a literal is refused, not guessed.
 */
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseEnvFile } from "../src/render/envreader";
import { ASSIGNMENT_READER, assignment } from "../src/text/assign";
import { readApiKeyLines } from "../src/render/apikey";
import { exportSecrets, secretsEnvPath, secretsEnvScript } from "../src/targets/secretsenv";

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

/**
 * Runs bash on `script` with the file; returns stdout. Its stdin is not a pipe: Node's pipes are
 * socket pairs, and a bash whose stdin is a socket and whose SHLVL is unset takes itself to be run
 * by sshd and reads ~/.bashrc, which is the machine's, not the test's.
 */
function bash(script: string): string {
  const r = spawnSync("bash", ["-c", script], {
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (r.status !== 0 && r.status !== 1 && r.status !== 2) throw new Error(r.stderr);
  return r.stdout;
}

const b64 = (s: string) => Buffer.from(s, "utf8").toString("base64");

describe("assignment and its readers", () => {
  it.each(Object.entries(HOSTILE_VALUES))("%s: written once, read back the same by every reader", (_, value) => {
    const file = join(dir, "secrets.env");
    writeFileSync(file, `# a comment\nOTHER="x"\nHF_TOKEN="stale"\n${assignment("HF_TOKEN", value)}\nAFTER=1\n`);
    const sourced = bash(`set -a; . ${file}; set +a; printf '%s' "$HF_TOKEN" | base64 -w0`);
    const show = `printf '%s %s' "$rc" "$(printf '%s' "$REPLY" | base64 -w0)"`;
    const read = bash(`${ASSIGNMENT_READER}\nsm121_get ${file} HF_TOKEN; rc=$?; ${show}`);
    expect(sourced).toBe(b64(value));
    expect(read).toBe(`0 ${b64(value)}`);
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
    for (const [line, want] of cases) {
      const file = join(dir, "case.env");
      writeFileSync(file, `${line}\n`);
      expect(bash(`${ASSIGNMENT_READER}\nsm121_get ${file} API_KEY; printf '%s %s' "$?" "$REPLY"`), line).toBe(want);
    }
    expect(bash(`${ASSIGNMENT_READER}\nsm121_get ${join(dir, "none")} API_KEY; printf '%s' "$?"`)).toBe("1");
    expect(existsSync(mark)).toBe(false);
  });
});

describe("secrets.env: one writer, one reader", () => {
  const what = "%s: what the writer writes, the start and the API-key reader read back";
  it.each(Object.entries(HOSTILE_VALUES))(what, (name, value) => {
    const state = join(dir, `state-${Object.keys(HOSTILE_VALUES).indexOf(name)}`);
    const secrets = { HF_TOKEN: value, API_KEY: value };
    const write = ["umask 077", `mkdir -p ${state}`, secretsEnvScript(state, secrets)].join("\n");
    const show = (v: string) => `printf '%s ' "$(printf '%s' "${v}" | base64 -w0)"`;
    const out = bash(
      [
        write,
        exportSecrets(state),
        show("$HF_TOKEN"),
        show("$API_KEY"),
        show("$VLLM_API_KEY"),
        readApiKeyLines([secretsEnvPath(state)]),
        show("$key"),
      ].join("\n"),
    );
    expect(out).toBe(`${b64(value)} `.repeat(4));
    expect(existsSync(mark)).toBe(false);
  });

  it("is removed by the writer when sm121 holds no secret, and then the reader passes nothing", () => {
    const state = join(dir, "state-none");
    const out = bash(
      [
        `mkdir -p ${state}`,
        secretsEnvScript(state, { HF_TOKEN: "x" }),
        secretsEnvScript(state, {}),
        `[ -e ${state}/secrets.env ] && echo left`,
        exportSecrets(state),
        'printf "%s" "${HF_TOKEN-unset}"',
      ].join("\n"),
    );
    expect(out).toBe("unset");
  });
});
