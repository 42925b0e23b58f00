/**
 * The node protocol (src/protocol): a record of every kind parses, a malformed or unknown one is an
 * error that names it, and what the writers print in real bash is what the parser reads.
 */
import { execFileSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  parseRecord,
  printRecord,
  ProtocolError,
  recordJson,
  recordKinds,
  recordOfLine,
  type RecordKind,
  type RecordOf,
} from "../src/protocol";
import { STATUS_RECORD } from "../src/targets/common";
import { timed } from "../src/serve/steps";
import { inflightOf, inflightScript } from "../src/serve/drain";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { testDir } from "./helpers/tmp";

const b64 = (s: string) => Buffer.from(s).toString("base64");

/** One record of each kind, as a node prints it: the map is typed, so a kind without one fails to compile. */
const EXAMPLES: { [K in RecordKind]: Omit<RecordOf<K>, "kind"> } = {
  status: { running: true, startedAt: "2026-12-01T10:00:00Z", detail: "" },
  models: { body64: b64('{"data":[{"id":"m"}]}') },
  firstToken: { readyMs: 2100, ttftMs: 35 },
  kvCacheLine: { line64: b64("GPU KV cache size: 1,234 tokens") },
  proof: { index: 0, found: true },
  readyPhases: { lines64: b64("INFO [default_loader.py:501] Loading weights took 0.01 seconds") },
  copied: { what: "image", ms: 812 },
  lastReady: { json64: b64('{"at":"2026-12-01T10:00:00Z","totalS":34,"startS":33.9,"firstTokenS":0.1}') },
  runningImage: { id: `sha256:${"ab".repeat(32)}`, digests64: b64(`nvcr.io/nvidia/vllm@sha256:${"cd".repeat(32)}`) },
  launcherRunning: {},
  check: { check: "image", subject: "vllm:1", why: "the image", fatal: true },
  hfCache: {
    check: {
      check: "hf-cache",
      subject: "~/hub/models--o--m",
      why: "w",
      fatal: false,
      model: { repo: "o/m", revision: "main" },
    },
    listing64: "",
  },
  state: { state: { identity: "abc", launch: "def", files: { "~/a": "0".repeat(64) } } },
  stopFailed: { stopFailed: { at: "2026-12-01T10:00:00Z", lines: "docker: no" } },
  watched: { file: "~/.sm121/deployments/d/engine.env", sha256: "0".repeat(64), ctime: 1_700_000_000 },
  mount: { path64: b64("/srv/x"), ctime: 1_700_000_000 },
  imageIds: { runs: `sha256:${"ab".repeat(32)}`, tag: `sha256:${"cd".repeat(32)}` },
  clients: { clients: 2 },
  envText: { text64: b64("MODEL=x\n") },
  memGate: { memAvailableKiB: 100_000_000 },
  written: { file: "~/a/.env", written: true, backup: "~/a/.env.sm121-bak-20261201T100000Z", sha256: "0".repeat(64) },
  took: { step: "stop", ms: 400 },
  lookPart: { index: 0 },
  lookImage: { line64: b64("sha256:abc ubuntu:24.04 ubuntu@sha256:def") },
  other: { deployment: "old" },
  holder: { deployment: "d", held: true },
  holderOwner: { deployment: "d", owner: { project: "p", stack: "s", backend: "file://x" } },
  displaced: { deployment: "old", by: { deployment: "d" } },
  live: {
    modelsCode: 200,
    completionCode: 200,
    ms: 35,
    before64: b64("vllm:request_success_total 3\n"),
    after64: null,
  },
  passive: { states: "SS", logAgeS: 12 },
  life: {
    boot: "7d1d1936-32ef-45d4-bb25-66603e1ceda6",
    bootAtUp: "",
    readyAt: "2026-12-01T10:00:00Z",
    tripwire64: b64('{"at":"2026-12-01T11:00:00Z","stoppedMs":1,"memAvailableKiB":1,"floorKiB":2}'),
    keeper64: "",
    gaveUp64: "",
  },
  memTotal: { bytes: 128_000_000_000 },
  modelConfig: { config64: b64("{}"), weightsBytes: null },
  modelHub: { config64: b64("{}"), weightsBytes: 1024 },
  placedFile: { content64: null },
  placedKept: {},
  image: { id: "sha256:abc", size: 1024 },
  imageAbsent: {},
  dgppBuild: { state: "running", last64: b64("step 3 of 7") },
  linkTool: { tool: "all_reduce_perf", path: "/opt/nccl-tests/build/all_reduce_perf" },
  inflight: { metrics64: b64("vllm:num_requests_running 3\n") },
  recv: { path: "/home/ops/.sm121/fanout/x/recv.sh" },
  sent: { bytes: 1024 },
  benchKey: { key64: "" },
  heldSecret: { value64: "" },
  need: { index: 3, ok: false },
  nodeMemory: { memKiB: null, wsf: "10", apps64: "", appsRc: 0 },
  engineRunning: {},
  wedge: { swapKiB: 0, oomKiller: "earlyoom", shmKiB: 65536 },
  wedgeShm: { container: "c", ipc: "private", shmBytes: 67108864 },
  kvLog: { log64: "", saved64: "" },
  probeOutput: { code: 0, out64: "" },
  smoke: { http: "200 0.01 0.02", body64: "" },
  load: { at: "1700000000.5", http: "200", lines: "" },
  siteHome: { home64: b64("/home/ops"), hf64: b64("/home/ops/.cache/huggingface"), hfExists: true },
  siteMemory: { memTotal: 128_000_000_000, memAvailableKiB: 100_000_000 },
  siteGpus: { gpus64: b64("GPU 0: NVIDIA GB10") },
  siteDocker: { docker64: b64("28.0.1"), images64: "" },
  siteNic: { nic: "enP2p1s0f1np1", addr: "192.168.100.11", via: "rdma" },
};

const bash = (script: string) => execFileSync("bash", ["-c", `set -euo pipefail\n${script}`], { encoding: "utf8" });

describe("every record kind", () => {
  it("has an example here, and the module lists no other", () => {
    expect(Object.keys(EXAMPLES).sort()).toEqual([...recordKinds()].sort());
  });

  for (const kind of recordKinds()) {
    const fields = EXAMPLES[kind] as Record<string, unknown>;
    it(`${kind}: parses, and refuses a field it does not know and one of the wrong type`, () => {
      expect(parseRecord(JSON.stringify({ kind, ...fields }))).toEqual({ kind, ...fields });
      // What recordJson prints (a record known when the script is built) is the same record.
      expect(recordOfLine(recordJson(kind, fields as never))).toEqual({ kind, ...fields });
      expect(() => parseRecord(JSON.stringify({ kind, ...fields, surplus: 1 }))).toThrow(
        new RegExp(`^node record "${kind}": Unrecognized key: "surplus"$`),
      );
      const first = Object.keys(fields)[0];
      if (first === undefined) return;
      const wrong = { kind, ...fields, [first]: [] };
      const err = (() => {
        try {
          parseRecord(JSON.stringify(wrong));
        } catch (e) {
          return e;
        }
        return undefined;
      })();
      expect(err).toBeInstanceOf(ProtocolError);
      expect((err as ProtocolError).record).toBe(kind);
      expect((err as ProtocolError).message).toMatch(new RegExp(`^node record "${kind}": ${first}: `));
    });
  }
});

describe("a record the parser cannot read", () => {
  it("is an error that says what is wrong: not JSON, no kind, an unknown kind", () => {
    expect(() => parseRecord("{oops")).toThrow(/^a node record: not JSON \(/);
    expect(() => parseRecord("[1]")).toThrow(/^a node record: not a JSON object$/);
    expect(() => parseRecord('{"bytes":1}')).toThrow(/^a node record: no "kind"$/);
    expect(() => parseRecord('{"kind":"teleport"}')).toThrow(
      /^node record "teleport": unknown kind \(known: status, models, /,
    );
    expect(() => parseRecord(`{"kind":"${"x".repeat(100)}"}`)).toThrow(/^node record "x{37}\.\.\.": unknown kind/);
  });

  it("but a status record of an earlier release (no kind; stored status scripts print it) is read as one", () => {
    const old = '{"running":false,"startedAt":null,"detail":"container gone"}';
    expect(parseRecord(old)).toEqual({ kind: "status", running: false, startedAt: null, detail: "container gone" });
    expect(() => parseRecord('{"running":"yes","startedAt":null}')).toThrow(/^node record "status": running: /);
  });

  it("is no record when the line does not start with the prefix", () => {
    expect(recordOfLine("engine log: @sm121 {")).toBeUndefined();
    expect(recordOfLine("@sm121-env-begin")).toBeUndefined();
  });
});

describe("the writers, run in bash", () => {
  it("print records the parser reads back: the status record, a timed step, a field from a shell value", () => {
    const status = bash(`running=true; started=2026-12-01T10:00:00Z; detail=\n${STATUS_RECORD}`);
    expect(recordOfLine(status.trim())).toEqual({
      kind: "status",
      running: true,
      startedAt: "2026-12-01T10:00:00Z",
      detail: "",
    });
    const gone = bash(`running=false; started=; detail="container gone"\n${STATUS_RECORD}`);
    expect(recordOfLine(gone.trim())).toMatchObject({ kind: "status", running: false, startedAt: null });
    const took = bash(timed("stop", "true")).trim();
    expect(recordOfLine(took)).toMatchObject({ kind: "took", step: "stop" });
    const asJson = '"$(printf \'%s\' "$n" | sed \'s/"/\\\\"/g; s/^/"/; s/$/"/\')"';
    const other = bash(`n='a "quoted" name'; ${printRecord("other", '"deployment":%s', asJson)}`);
    expect(recordOfLine(other.trim())).toEqual({ kind: "other", deployment: 'a "quoted" name' });
  });

  it("print the replica drain's gauge, and null where the engine exports none", () => {
    const dir = testDir("sm121-inflight-");
    const gauge = 'vllm:num_requests_running{engine="0"} 2.0\nvllm:num_requests_running{engine="1"} 1.0\n';
    writeFileSync(join(dir, "metrics"), gauge);
    const records = (out: string) => out.split("\n").flatMap((l) => recordOfLine(l) ?? []);
    const read = (url: string, series = "vllm:num_requests_running") =>
      inflightOf(records(bash(inflightScript(url, series))), series);
    expect(read(`file://${dir}/metrics`)).toBe(3);
    writeFileSync(join(dir, "nan"), 'vllm:num_requests_running{engine="0"} NaN\n');
    expect(read(`file://${dir}/nan`)).toBeUndefined();
    expect(read(`file://${dir}/metrics`, "sglang:num_running_reqs")).toBeUndefined();
    expect(read(`file://${dir}/none`)).toBeUndefined();
  });
});
