/**
 * An SGLang API key handed over in the --config YAML, as real SGLang 0.5.23 reads it: the
 * expected outcomes are the real loader's and parser's own answers
 * (test/fixtures/engine-options/sglang-config-keys.json, scripts/engine-options/config-keys.py).
 * The key file is written by sm121's own start-script lines from a secrets.env written by sm121's
 * own writer; the test site's fake engine must then give the real outcome, and sm121's plan must
 * refuse exactly the keys real SGLang refuses, naming sm121:apiKey and never the key.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { secretRefusals } from "../src/render/secrets";

import { keyFileScript } from "../src/targets/common";
import { exportSecrets, secretsEnvScript } from "../src/targets/secretsenv";

const AT = allocate(__filename);

interface Case {
  key: string;
  apiKey?: string;
  error?: string;
}

const cases = JSON.parse(
  readFileSync(join(__dirname, "fixtures", "engine-options", "sglang-config-keys.json"), "utf8"),
) as Case[];
const root = mkdtempSync(join(tmpdir(), "sm121-sglang-key-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** sm121's writer, then its start-script lines, in bash: the key file exactly as a node gets it. */
function keyFileFor(key: string, i: number): string {
  const state = join(root, `d${i}`);
  const file = join(state, "api-key.yaml");
  const script = [
    `mkdir -p ${state}`,
    "umask 077",
    secretsEnvScript(state, { API_KEY: key }),
    exportSecrets(state),
    keyFileScript(file),
  ].join("\n");
  const r = spawnSync("bash", ["-euo", "pipefail", "-c", script], {
    encoding: "utf8",
    env: { PATH: process.env["PATH"] ?? "", HOME: root },
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return file;
}

/** The fake engine's SGLang plan for `--model-path m --config <file>`: its exit and message. */
function fakeEngine(files: string[]): Array<{ code: number; text: string; apiKey?: string }> {
  const shims = join(__dirname, "site", "shims", "engine");
  const script = `
    const c = require(${JSON.stringify(join(shims, "common.js"))});
    const sglang = require(${JSON.stringify(join(shims, "sglang.js"))});
    const out = [];
    for (const f of JSON.parse(process.argv[1])) {
      try {
        const p = sglang.plan(["--model-path", "Q/q", "--config", f]);
        out.push({ code: 0, text: "", apiKey: p.apiKey });
      } catch (e) {
        if (!(e instanceof c.EngineExit)) throw e;
        out.push({ code: e.code, text: e.message });
      }
    }
    process.stdout.write(JSON.stringify(out));`;
  const env = { PATH: process.env["PATH"] ?? "", SIM_NODE_ROOT: root, SIM_NODE_IP: AT.host(0) };
  const r = spawnSync(process.execPath, ["-e", script, JSON.stringify(files)], {
    env,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout) as Array<{ code: number; text: string; apiKey?: string }>;
}

describe("an SGLang API key in its --config file, against real SGLang 0.5.23", () => {
  const files = cases.map((c, i) => keyFileFor(c.key, i));
  const runs = fakeEngine(files);
  const sglang = [{ deployment: "sg", engine: "sglang" as const }];

  it("the recorded cases include keys real SGLang refuses and keys it takes", () => {
    expect(cases.some((c) => c.error !== undefined)).toBe(true);
    expect(cases.filter((c) => c.error === undefined).length).toBeGreaterThan(10);
    expect(readFileSync(files[0] ?? "", "utf8")).toBe(`api-key: '${cases[0]?.key ?? ""}'\n`);
  });

  it.each(cases.map((c, i) => [c.key.slice(0, 40), c, i] as const))("%s", (_, c, i) => {
    const run = runs[i] ?? { code: -1, text: "" };
    const refusals = secretRefusals({ API_KEY: c.key }, sglang).filter((r) => r.includes("SGLang"));
    if (c.error !== undefined) {
      // The fake engine stops as real SGLang does, with argparse's exit 2 and message.
      expect(run.code).toBe(2);
      expect(run.text).toContain(`sglang serve: error: ${c.error}`);
      // sm121 refuses it at plan time, naming the config key and the fix, never the key.
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toContain('sm121:apiKey begins with "-"');
      expect(refusals[0]).toContain(c.error);
      // (A key that is itself a word of the message, "--" or "--api-key", is no leak.)
      if (!["--", "--api-key"].includes(c.key)) expect(refusals[0]).not.toContain(c.key);
    } else {
      expect(run.code, run.text).toBe(0);
      expect(run.apiKey).toBe(c.apiKey);
      expect(c.apiKey).toBe(c.key);
      expect(refusals).toEqual([]);
    }
  });

  it("refuses no key for an engine that does not read a --config file", () => {
    for (const c of cases)
      expect(
        secretRefusals({ API_KEY: c.key }, [{ deployment: "v", engine: "vllm" }]).filter((r) => r.includes("SGLang")),
      ).toEqual([]);
  });
});
