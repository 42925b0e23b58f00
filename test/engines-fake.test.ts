/**
 * The test site's fake engines parse argv as the real engines do: every case recorded from the
 * real parsers (test/fixtures/engine-options/, scripts/engine-options/outcomes.py) gets the real
 * outcome, argparse's message included; and the start-up contracts read the environment the real
 * engines read, no stricter than they are.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";

const AT = allocate(__filename);

interface Outcome {
  args: string[];
  dests?: string[];
  error?: string;
}
interface Run {
  code: number;
  text: string;
}

const SHIMS = join(__dirname, "site", "shims");
const root = mkdtempSync(join(tmpdir(), "sm121-fake-engine-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/**
 * Runs the fake engine's start-up checks for many command lines in one node process: the plan
 * (what the engine would do) or the exit it would make, with its stderr text.
 */
function plans(
  cases: Array<{ mode: "serve" | "api" | "sglang"; argv: string[]; env?: Record<string, string> }>,
): Run[] {
  const script = `
    const c = require(${JSON.stringify(join(SHIMS, "engine", "common.js"))});
    const vllm = require(${JSON.stringify(join(SHIMS, "engine", "vllm.js"))});
    const sglang = require(${JSON.stringify(join(SHIMS, "engine", "sglang.js"))});
    const out = [];
    for (const k of JSON.parse(process.argv[1])) {
      const saved = { ...process.env };
      Object.assign(process.env, k.env || {});
      try {
        k.mode === "sglang" ? sglang.plan(k.argv) : vllm.plan(k.mode, k.argv);
        out.push({ code: 0, text: "" });
      } catch (e) {
        if (!(e instanceof c.EngineExit)) throw e;
        out.push({ code: e.code, text: e.message });
      }
      process.env = saved;
    }
    process.stdout.write(JSON.stringify(out));`;
  const env = { PATH: process.env["PATH"] ?? "", SIM_NODE_ROOT: root, SIM_NODE_IP: AT.host(0) };
  const r = spawnSync(process.execPath, ["-e", script, JSON.stringify(cases)], {
    env,
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`fake engine runner failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Run[];
}

const outcomes = (engine: string): Outcome[] =>
  JSON.parse(
    readFileSync(join(__dirname, "fixtures", "engine-options", `${engine}-outcomes.json`), "utf8"),
  ) as Outcome[];

describe.each([
  { engine: "vllm", mode: "serve" as const, prefix: ["m"], prog: "vllm serve" },
  { engine: "sglang", mode: "sglang" as const, prefix: ["--model-path", "m"], prog: "sglang serve" },
])("$engine: the fake parser gives the real parser's outcome", ({ engine, mode, prefix, prog }) => {
  const cases = outcomes(engine);
  const runs = plans(cases.map((c) => ({ mode, argv: [...prefix, ...c.args] })));

  it.each(cases.map((c, i) => [c.args.join(" "), c, i] as const))("%s", (_, c, i) => {
    const run = runs[i] ?? { code: -1, text: "" };
    if (c.error !== undefined && !/^[A-Z]\w*Error: /.test(c.error)) {
      expect(run.code).toBe(2);
      expect(run.text.split("\n").find((l) => l.startsWith(`${prog}: error: `))).toBe(`${prog}: error: ${c.error}`);
    } else if (c.error !== undefined) {
      expect(run.text).toContain(c.error.replace(/^(\w+): /, "$1: "));
    } else {
      // Accepted by the parser: whatever the engine says next, it is no argparse error.
      expect(run.code, run.text).not.toBe(2);
    }
  });
});

describe("start-up contracts, as the real engines have them", () => {
  const IP = AT.host(0);
  const sg = (argv: string[], env: Record<string, string> = {}) => ({
    mode: "sglang" as const,
    argv: ["--model-path", "Q/q", ...argv],
    env,
  });
  const vl = (argv: string[], env: Record<string, string> = {}, mode: "serve" | "api" = "serve") => ({
    mode,
    argv,
    env,
  });
  const dist = ["--tp-size", "2", "--nnodes", "2", "--dist-init-addr", `${IP}:31000`];
  const master = ["--tensor-parallel-size", "2", "--nnodes", "2", "--master-addr", AT.host(1), "--master-port", "9000"];
  const [
    hostIp,
    legacyIp,
    workerOnly,
    noRank,
    noPort,
    headlessHostPort,
    apiServerWorker,
    serveWorker,
    ascHeadless,
    floatKv,
  ] = plans([
    sg(dist, { SGLANG_HOST_IP: IP }),
    sg(dist, { HOST_IP: IP }),
    sg(dist, { SGLANG_WORKER_IP: IP }),
    sg(dist, { SGLANG_HOST_IP: IP }),
    sg(["--tp-size", "2", "--nnodes", "2", "--node-rank", "1", "--dist-init-addr", AT.host(1)], {
      SGLANG_HOST_IP: IP,
    }),
    vl(["Q/q", ...master, "--node-rank", "1", "--headless", "--host", IP, "--port", "8000"], { VLLM_HOST_IP: IP }),
    vl(["--model", "Q/q", ...master, "--node-rank", "1", "--headless"], { VLLM_HOST_IP: IP }, "api"),
    vl(["Q/q", ...master, "--node-rank", "1"], { VLLM_HOST_IP: IP }),
    vl(["Q/q", ...master, "--node-rank", "1", "--headless", "--api-server-count", "1"], { VLLM_HOST_IP: IP }),
    vl(["Q/q", "--kv-cache-dtype", "float16"]),
  ]);

  it("SGLang reads its address from SGLANG_HOST_IP, or HOST_IP, and not from SGLANG_WORKER_IP", () => {
    expect([hostIp?.code, legacyIp?.code]).toEqual([0, 0]);
    expect(workerOnly?.text).toContain("SGLANG_HOST_IP=(unset) (or HOST_IP) is not this node's address");
  });

  it("SGLang's --node-rank defaults to 0; --dist-init-addr without a port fails in torch's tcp:// rendezvous", () => {
    expect(noRank?.code).toBe(0);
    expect(noPort?.text).toContain("tcp:// rendezvous: port number missing");
  });

  it("vLLM takes --host/--port beside --headless, and refuses --api-server-count with it as vLLM does", () => {
    expect(headlessHostPort?.code, headlessHostPort?.text).toBe(0);
    expect(ascHeadless?.text).toContain("--api-server-count=1 cannot be used with --headless");
  });

  it("a vLLM worker rank via the old api_server module starts its own API server (it ignores --headless)", () => {
    expect(apiServerWorker?.text).toContain("ignores --headless");
    expect(serveWorker?.text).toContain("run it with --headless");
  });

  it("knows the kv-cache dtypes that vLLM 0.33.0 knows", () => {
    expect(floatKv?.code, floatKv?.text).toBe(0);
  });
});
