/**
 * The fake vLLM (test/site/shims/fake-engine.js) held to the real one (PyPI's CPU build on the
 * tiny model, test/site/README.md "The real vLLM") wherever the fast suites lean on it: one corpus
 * of command lines through both parsers (the same accepted, the same refused with argparse's
 * words); the two engines started with the same command line, then the same status per route and
 * key, the log lines sm121 reads, the same metric families with the same label names, and the
 * same stop on SIGTERM. Any difference fails, so the fake cannot drift from the engine again.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DRIVERS } from "../../src/engines";
import { REPO } from "../helpers/project";
import { testDir } from "../helpers/tmp";
import { allocate } from "../site/alloc";
import { placeCheckpoint } from "../site/hfcache";
import { needsRealParts } from "../site/lane";
import { REAL_VLLM_VERSION, realVllm, TINY_MODEL } from "../site/realvllm";

const AT = allocate(__filename);
const KEY = "sk-conformance-7d2a";
const SHIMS = join(__dirname, "..", "site", "shims");
/** The fake as the real engine's version: that version's option and metric tables (shims/engine/argparse.js). */
const AS_REAL = { SM121_SIM_VLLM_VERSION: REAL_VLLM_VERSION };

/**
 * Command lines after `vllm serve MODEL`: the real parser's own hard cases (its abbreviations,
 * `_` for `-`, `=`, missing values, unknown options) and the flags sm121 renders.
 */
const CORPUS: string[][] = [
  ["--tensor_parallel_size", "1"],
  ["--tensor-parallel", "1"],
  ["--served-model", "other"],
  ["--head"],
  ["-n", "1"],
  ["--kv-cache-dtype", "bogus"],
  ["--tensor"],
  ["--port"],
  ["--headless=1"],
  ["--enforce-eager"],
  ["--no-enable-prefix-caching"],
  ["--bogus-flag", "1"],
  ["--max-model-length", "4096"],
  ["stray"],
  ["--port", "--enforce-eager"],
  ["-tp=2"],
  ["-tp2"],
  ["--max-num", "8"],
  ["--dtype", "fp9"],
  ["--api-key"],
  ["--max-model-len", "512", "--max-num-seqs", "32", "--gpu-memory-utilization", "0.3"],
  ["--served-model-name", "tiny", "--host", "127.0.0.1", "--port", "8000", "--tensor-parallel-size", "2"],
  ["--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port", "9000", "--headless"],
  ["--distributed-executor-backend", "mp"],
];

interface Outcome {
  args: string[];
  dests?: string[];
  error?: string;
}

/** The real parser's outcome of each case (scripts/engine-options/outcomes.py, from the virtualenv). */
function realOutcomes(cases: string[][]): Outcome[] {
  const r = spawnSync(
    join(realVllm().venv, "bin", "python"),
    [join(REPO, "scripts", "engine-options", "outcomes.py"), "vllm", "-"],
    {
      input: JSON.stringify(cases),
      encoding: "utf8",
      maxBuffer: 64 << 20,
    },
  );
  if (r.status !== 0) throw new Error(`outcomes.py failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Outcome[];
}

/** The fake's: its exit code and text at start for `vllm serve m CASE`. */
function fakeOutcomes(cases: string[][], root: string): Array<{ code: number; text: string }> {
  const script = `
    const c = require(${JSON.stringify(join(SHIMS, "engine", "common.js"))});
    const vllm = require(${JSON.stringify(join(SHIMS, "engine", "vllm.js"))});
    const out = [];
    for (const a of JSON.parse(process.argv[1])) {
      try { vllm.plan("serve", ["m", ...a]); out.push({ code: 0, text: "" }); }
      catch (e) { if (!(e instanceof c.EngineExit)) throw e; out.push({ code: e.code, text: e.message }); }
    }
    process.stdout.write(JSON.stringify(out));`;
  const r = spawnSync(process.execPath, ["-e", script, JSON.stringify(cases)], {
    env: { PATH: process.env["PATH"] ?? "", SIM_NODE_ROOT: root, SIM_NODE_IP: AT.host(1), ...AS_REAL },
    encoding: "utf8",
  });
  if (r.status !== 0) throw new Error(`fake engine runner failed: ${r.stderr}`);
  return JSON.parse(r.stdout) as Array<{ code: number; text: string }>;
}

interface Engine {
  name: string;
  child: ChildProcess;
  base: string;
  log: string[];
  exited: Promise<number | null>;
}

function start(name: string, argv0: string, args: string[], env: Record<string, string>, base: string): Engine {
  const child = spawn(argv0, args, {
    env: { PATH: process.env["PATH"] ?? "", HOME: process.env["HOME"] ?? "", ...env },
  });
  const log: string[] = [];
  const take = (chunk: Buffer) => log.push(...chunk.toString("utf8").split("\n"));
  child.stdout?.on("data", take);
  child.stderr?.on("data", take);
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { name, child, base, log, exited };
}

async function ready(e: Engine, timeoutMs: number): Promise<void> {
  let gone = false;
  void e.exited.then(() => (gone = true));
  for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 500))) {
    if (gone) throw new Error(`${e.name} exited before it served:\n${e.log.slice(-40).join("\n")}`);
    const code = await fetch(`${e.base}/health`).then(
      (r) => r.status,
      () => 0,
    );
    if (code === 200) return;
  }
  throw new Error(`${e.name} did not serve within ${timeoutMs / 1000} s:\n${e.log.slice(-40).join("\n")}`);
}

/** Each `vllm:` family of a /metrics text: its type and the sorted label names of its samples. */
function families(text: string): Map<string, string> {
  const out = new Map<string, string>();
  const labels = new Map<string, Set<string>>();
  let current = "";
  for (const line of text.split("\n")) {
    const type = /^# TYPE (vllm:\S+) (\S+)$/.exec(line);
    if (type !== null) {
      current = type[1] ?? "";
      out.set(current, type[2] ?? "");
      labels.set(current, new Set());
      continue;
    }
    const sample = /^(vllm:[^{\s]+)(?:\{([^}]*)\})? /.exec(line);
    if (sample === null || current === "") continue;
    for (const m of (sample[2] ?? "").matchAll(/(\w+)="/g))
      if (m[1] !== "le" && m[1] !== "quantile") labels.get(current)?.add(m[1] ?? "");
  }
  return new Map([...out].map(([k, t]) => [k, `${t} {${[...(labels.get(k) ?? [])].sort().join(",")}}`]));
}

describe.sequential("the fake vLLM agrees with the real one", () => {
  let real: Engine;
  let fake: Engine;
  let root: string;
  const serveArgs = (host: string, port: number) => [
    "serve",
    TINY_MODEL,
    ...["--served-model-name", "tiny", "--max-model-len", "512", "--enforce-eager", "--api-key", KEY],
    // The stop the rolling docs recommend: finish what runs, refuse what comes (docs/rolling.md).
    ...["--shutdown-timeout", "3"],
    ...["--host", host, "--port", String(port)],
  ];

  beforeAll(async () => {
    needsRealParts("the real vLLM");
    const r = realVllm();
    root = testDir("sm121-conformance-");
    const hfHome = join(root, "hf");
    mkdirSync(join(root, "etc"), { recursive: true });
    const files: Record<string, Buffer> = {};
    for (const f of readdirSync(r.model).filter((x) => !x.startsWith(".") && x !== "sm121-tiny-model.json"))
      files[f] = readFileSync(join(r.model, f));
    placeCheckpoint(hfHome, TINY_MODEL, files);
    const common = { HF_HOME: hfHome, HF_HUB_OFFLINE: "1" };
    real = start(
      "the real vLLM",
      join(r.venv, "bin", "vllm"),
      serveArgs(AT.host(0), AT.port(0)),
      { ...common, VLLM_HOST_IP: AT.host(0), VLLM_CPU_OMP_THREADS_BIND: "0", VLLM_CPU_KVCACHE_SPACE: "1" },
      `http://${AT.host(0)}:${AT.port(0)}`,
    );
    fake = start(
      "the fake vLLM",
      process.execPath,
      [join(SHIMS, "fake-engine.js"), "vllm", ...serveArgs(AT.host(1), AT.port(1))],
      {
        ...common,
        ...AS_REAL,
        VLLM_HOST_IP: AT.host(1),
        SIM_NODE_ROOT: root,
        SIM_NODE_IP: AT.host(1),
        SIM_NODE_NAME: "c1",
      },
      `http://${AT.host(1)}:${AT.port(1)}`,
    );
    await Promise.all([ready(real, 600_000), ready(fake, 60_000)]);
  }, 660_000);
  afterAll(async () => {
    for (const e of [real, fake]) {
      if (e?.child.exitCode === null) {
        e.child.kill("SIGKILL");
        await e.exited;
      }
    }
  });

  it("accepts and refuses the same command lines, with argparse's words", () => {
    const want = realOutcomes(CORPUS);
    const got = fakeOutcomes(CORPUS, root);
    const differ = want.flatMap((w, i) => {
      const g = got[i] ?? { code: -1, text: "" };
      const said = g.text.split("\n").find((l) => l.startsWith("vllm serve: error: "));
      const fake = g.code === 2 ? `refused: ${said?.slice("vllm serve: error: ".length) ?? g.text}` : "accepted";
      const real = w.error === undefined ? "accepted" : `refused: ${w.error}`;
      return fake === real ? [] : [`${w.args.join(" ")}: real ${real}; fake ${fake}`];
    });
    expect(differ).toEqual([]);
  }, 120_000);

  it("answers each route with the same status, with no key, a wrong key and the key", async () => {
    const routes: Array<[string, string, string?]> = [
      ["GET", "/v1/models"],
      ["POST", "/v1/chat/completions", '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'],
      ["POST", "/v1/completions", '{"model":"tiny","prompt":"hi","max_tokens":2}'],
      ["POST", "/v1/chat/completions", '{"model":"other","messages":[{"role":"user","content":"hi"}],"max_tokens":2}'],
      ["GET", "/health"],
      ["GET", "/metrics"],
      ["GET", "/version"],
      ["GET", "/v1/nonexistent"],
    ];
    const statuses = async (e: Engine) => {
      const out: string[] = [];
      for (const [method, route, body] of routes) {
        for (const key of [undefined, "sk-wrong", KEY]) {
          const headers: Record<string, string> = { "Content-Type": "application/json" };
          if (key !== undefined) headers["Authorization"] = `Bearer ${key}`;
          const res = await fetch(`${e.base}${route}`, { method, headers, ...(body !== undefined && { body }) });
          await res.arrayBuffer();
          out.push(
            `${method} ${route}${body?.includes('"other"') === true ? " (another model)" : ""} ` +
              `${key === undefined ? "no key" : key === KEY ? "the key" : "a wrong key"}: ${res.status}`,
          );
        }
      }
      return out;
    };
    expect(await statuses(fake)).toEqual(await statuses(real));
  }, 120_000);

  it("prints the KV cache line sm121's verify step reads", () => {
    const pattern = new RegExp(DRIVERS.vllm.kvCachePattern ?? "^$");
    for (const e of [real, fake])
      expect(
        e.log.some((l) => pattern.test(l)),
        e.name,
      ).toBe(true);
  });

  it("exports the same metric families, of the same types, with the same label names", async () => {
    const text = async (e: Engine) => (await fetch(`${e.base}/metrics`)).text();
    const [want, got] = [families(await text(real)), families(await text(fake))];
    const show = (m: Map<string, string>) => [...m].map(([k, v]) => `${k} ${v}`).sort();
    expect(show(got)).toEqual(show(want));
  });

  it("stops on SIGTERM the same way: new requests refused while it drains, exit 0, the port closed", async () => {
    const chat = '{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":2}';
    const stop = async (e: Engine) => {
      e.child.kill("SIGTERM");
      await new Promise((r) => setTimeout(r, 300));
      const late = await fetch(`${e.base}/v1/chat/completions`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${KEY}` },
        body: chat,
      }).then(
        async (r) =>
          `${r.status} ${JSON.stringify(((await r.json()) as { error?: { message?: string } }).error?.message)}`,
        () => "no answer",
      );
      const code = await e.exited;
      const open = await fetch(`${e.base}/health`).then(
        () => true,
        () => false,
      );
      const uvicorn = e.log.filter((l) => l.startsWith("INFO:     ") && !l.includes(' - "')).slice(-3);
      return { late, code, open, uvicorn };
    };
    const [r, f] = await Promise.all([stop(real), stop(fake)]);
    expect(f).toEqual(r);
  }, 120_000);
});
