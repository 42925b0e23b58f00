/**
 * What the plan-time look finds on the nodes, as messages (src/serve/probe, observe, owner): every
 * kind of finding has its words in all six catalogues and says the node's own values (names,
 * files, codes) in each language; the state keeps keys and arguments, no words of any language;
 * and a state of version 3, which kept the look's findings in English words, is upgraded to say
 * those words as recorded, with no restart for it.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { decide } from "../src/providers/engineDecide";
import { fromStored } from "../src/providers/engineWire";
import { STATE_VERSIONS, upgrade } from "../src/providers/stateVersion";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";
import { ownerDrift, type Holder, type Owner } from "../src/serve/owner";
import { describeCheck, type FailedCheck, type NodeState } from "../src/serve/probe";
import { driftFindings, envKeyDiff, type DriftKind } from "../src/serve/drift";
import { liveWords } from "../src/serve/liveness";
import { CATALOGUES, LOCALES, msg, say, type Msg } from "../src/text/messages";
import { NOT_RUNNING, notRunningMsg } from "../src/targets/common";
import { engineWire, NOTHING_ALLOWED } from "./helpers/wire";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const b = bundles.find((x) => x.deployment === "qwen3-32b-vllm-tp2") as DeploymentBundle;
const docker = b.nodes[0] as NodeBundle;
const FILE = "/srv/spark/recipes/qwen/.env";
/** A node bundle with an .env of known keys (a script recipe's), beside the docker one. */
const withEnv: NodeBundle = {
  ...docker,
  node: "spark2",
  files: [{ ...(docker.files[0] as NodeBundle["files"][number]), path: FILE, sha256: "a".repeat(64) }],
  envKeys: { MAX_NUM_SEQS: "8", MODEL: "Qwen/Qwen3-32B" },
};

const STARTED = "2026-12-01T10:00:00Z";
const base = (nb: NodeBundle, over: Partial<NodeState> = {}): NodeState => ({
  failed: [],
  running: true,
  startedAt: STARTED,
  others: [],
  holders: [],
  recorded: { identity: nb.identity, files: { [FILE]: "a".repeat(64) } },
  files: { [FILE]: { sha256: "a".repeat(64), ctime: Date.parse(STARTED) / 1000 - 60 } },
  ...over,
});
const later = Date.parse(STARTED) / 1000 + 60;
const hung = { verdict: "hung" as const, timeoutS: 10, modelsCode: 200, completionCode: 0, progress: null };

/**
 * Each kind of drift, with a node state that shows it and the node's values its words must carry.
 * A kind added to DriftKind without a case here fails to compile.
 */
const KINDS = {
  removed: { nb: withEnv, st: base(withEnv, { files: {} }), values: [FILE] },
  edited: {
    nb: withEnv,
    st: base(withEnv, {
      files: { [FILE]: { sha256: "b".repeat(64), ctime: later } },
      envText: 'MAX_NUM_SEQS="4"\nOLD_SETTING="x"\n',
    }),
    values: ["MAX_NUM_SEQS 8 -> 4", "MODEL", "OLD_SETTING", ".env"],
  },
  "no-record": { nb: withEnv, st: base(withEnv, { running: false, recorded: undefined }), values: ["sm121"] },
  "other-bundle": { nb: withEnv, st: base(withEnv, { recorded: { identity: "older", files: {} } }), values: [] },
  "stop-failed": {
    nb: withEnv,
    st: base(withEnv, { stopFailed: { at: "2026-12-01T09:00:00Z", lines: "docker: Error response" } }),
    values: ["2026-12-01T09:00:00Z", "docker: Error response"],
  },
  "not-running": {
    nb: withEnv,
    st: base(withEnv, { running: false, detail: "docker does not answer: Cannot connect to the Docker daemon" }),
    values: ["Cannot connect to the Docker daemon"],
  },
  hung: {
    nb: withEnv,
    st: base(withEnv, { live: { ...hung, progress: { before: 7, after: 7 } } }),
    values: ["10", "7"],
  },
  "newer-mount": {
    nb: withEnv,
    st: base(withEnv, { containerMounts: { "/models/qwen/patch.py": later } }),
    values: ["/models/qwen/patch.py"],
  },
  "tag-moved": {
    nb: { ...withEnv, image: "nvcr.io/nvidia/vllm:26.01-py3" },
    st: base(withEnv, { image: { runs: `sha256:${"ab12".repeat(16)}`, tag: `sha256:${"cd34".repeat(16)}` } }),
    values: ["nvcr.io/nvidia/vllm:26.01-py3", "ab12ab12ab12", "cd34cd34cd34"],
  },
} satisfies Record<DriftKind, { nb: NodeBundle; st: NodeState; values: string[] }>;

/** Every message key a message uses, its arguments' too. */
const keysOf = (m: Msg): string[] => [
  m.key,
  ...Object.values(m.args ?? {}).flatMap((v) => (typeof v === "object" ? keysOf(v) : [])),
];

/** The message in every locale: each key in each catalogue, no placeholder left, the node's values in it. */
function expectSaidEverywhere(m: Msg, values: readonly string[]): void {
  for (const key of keysOf(m)) for (const l of LOCALES) expect(CATALOGUES[l], `${key} in ${l}`).toHaveProperty([key]);
  const en = say(m, "en");
  for (const l of LOCALES) {
    const text = say(m, l);
    expect(text, `${m.key} in ${l}`).not.toMatch(/\{[A-Za-z]+\}/);
    for (const v of values) expect(text, `${m.key} in ${l}`).toContain(v);
    // Words, not only the node's values: each language says them its own way (the node's own
    // account, kept as found, is the node's).
    const words = m.key !== "state.asFound" && en.replace(/[^a-z]/g, "").length > 12;
    if (l !== "en" && words) expect(text, `${m.key} in ${l}`).not.toBe(en);
  }
}

describe("the look's findings, as messages in six languages", () => {
  it("finds each kind of drift and says it, with the node's values, in every catalogue", () => {
    for (const [kind, c] of Object.entries(KINDS)) {
      const found = driftFindings(c.nb, c.st).filter((d) => d.kind === kind);
      expect(
        found.map((d) => d.kind),
        kind,
      ).toEqual([kind]);
      for (const d of found) expectSaidEverywhere(d.said, ["spark2", ...c.values]);
    }
  });

  it("says why the engine does not run in the reader's language: the status scripts' words by the table", () => {
    for (const [word, key] of Object.entries(NOT_RUNNING)) {
      expect(notRunningMsg(word)).toEqual(msg(key));
      expect(say(msg(key), "en")).toBe(word);
      for (const l of LOCALES.filter((x) => x !== "en")) expect(say(msg(key), l)).not.toBe(word);
    }
    const down = notRunningMsg("docker does not answer: permission denied");
    expect(typeof down === "string" ? down : say(down, "ru")).toBe("docker не отвечает: permission denied");
    // Anything else is the node's own account, as printed.
    expect(notRunningMsg("exit status 137")).toBe("exit status 137");
  });

  it("says the English words of the plan as they read before", () => {
    const said = (kind: DriftKind) => {
      const c = KINDS[kind];
      return driftFindings(c.nb, c.st)
        .filter((d) => d.kind === kind)
        .map((d) => say(d.said, "en"));
    };
    expect(said("not-running")).toEqual([
      "spark2: the engine is not running (docker does not answer: Cannot connect to the Docker daemon)",
    ]);
    expect(said("edited")).toEqual([
      "spark2: .env edited on the node: MAX_NUM_SEQS 8 -> 4, OLD_SETTING added (x), MODEL removed",
    ]);
    expect(said("hung")).toEqual([
      "spark2: answers /v1/models but no token in 10 s and its request counters stood still (7)",
    ]);
    expect(said("newer-mount")).toEqual([
      "spark2: changed after the engine started: /models/qwen/patch.py (a running engine keeps the old file)",
    ]);
    const silent = liveWords("spark2", { ...hung, modelsCode: 0 });
    expect(say(silent, "en")).toBe("spark2: the engine runs but /v1/models does not answer");
    const code = liveWords("spark2", { ...hung, modelsCode: 503 });
    expect(say(code, "ru")).toBe("spark2: движок запущен, но /v1/models отвечает HTTP 503");
  });

  it("says every failed preflight check and the .env key diff, with the subject and the reason", () => {
    const check = (c: string, over: Partial<FailedCheck> = {}): FailedCheck => ({
      check: c,
      subject: "nvcr.io/nvidia/vllm:26.01-py3",
      why: "docker image inspect",
      fatal: true,
      ...over,
    });
    const cases: Array<[FailedCheck, string[]]> = [
      [check("roce"), ["docker image inspect"]],
      [check("image"), ["nvcr.io/nvidia/vllm:26.01-py3"]],
      [check("command"), ["nvcr.io/nvidia/vllm:26.01-py3"]],
      [check("vllm-container"), ["nvcr.io/nvidia/vllm:26.01-py3"]],
      [check("file"), ["nvcr.io/nvidia/vllm:26.01-py3"]],
      [check("docker", { why: "Cannot connect to the Docker daemon" }), ["Cannot connect to the Docker daemon"]],
      [
        check("hf-cache", {
          subject: "/hf/hub/models--org--tiny",
          model: { repo: "org/tiny", revision: "main" },
          missing: ["a.safetensors", "b.safetensors", "c.safetensors", "d.safetensors", "e.safetensors"],
        }),
        ["org/tiny@main", "/hf/hub/models--org--tiny", "a.safetensors; b.safetensors; c.safetensors", "2"],
      ],
      [check("hf-cache", { subject: "/hf/hub/models--org--tiny" }), ["/hf/hub/models--org--tiny"]],
    ];
    for (const [f, values] of cases) expectSaidEverywhere(describeCheck(f), values);
    const keys = envKeyDiff(withEnv, base(withEnv, { envText: 'MAX_NUM_SEQS="4"\n' }));
    expect(keys === undefined ? "" : say(keys, "en")).toBe(
      ".env keys, node -> render: MAX_NUM_SEQS 4 -> 8, MODEL added (Qwen/Qwen3-32B)",
    );
    if (keys !== undefined) expectSaidEverywhere(keys, ["MAX_NUM_SEQS 4 -> 8", "Qwen/Qwen3-32B"]);
  });

  it("says a node another stack took, in every language, with the stacks and the backends", () => {
    const me: Owner = { project: "sm121", stack: "prod", backend: "file:///state" };
    const other: Owner = { project: "sm121", stack: "lab", backend: "file:///state" };
    const moved: Owner = { ...me, backend: "s3://old" };
    const cases: Array<[Holder[], string[]]> = [
      [[{ deployment: "chat", held: true, owner: other }], ["spark2", "chat", "lab"]],
      [[{ deployment: "chat", held: true, owner: moved }], ["spark2", "chat", "s3://old", "file:///state"]],
      [
        [{ deployment: "chat", held: false, owner: me, displacedBy: { deployment: "code", owner: other } }],
        ["spark2", "chat", "code", "lab"],
      ],
    ];
    for (const [holders, values] of cases) {
      const found = ownerDrift("spark2", "chat", holders, me);
      expect(found).toHaveLength(1);
      for (const m of found) expectSaidEverywhere(m, values);
    }
  });
});

describe("the state of the look's findings", () => {
  const DEAD = "spark2: the engine is not running (container gone)";
  const HUNG = "spark2: answers /v1/models but no token in 10 s";
  const v3 = {
    ...engineWire(b, { stateVersion: 3 }),
    drift: [DEAD, HUNG],
    unknown: ["Pulumi.prod.yaml:14:7: sm121:nodes.spark3.ssh: spark3 unreachable: connect ETIMEDOUT"],
    __run: {
      allow: NOTHING_ALLOWED,
      preflight: false,
      findings: { fatal: ["spark2: no image x (docker image inspect)"], warnings: [], notes: ["spark2: .env keys"] },
      health: [DEAD],
    },
    outcome: {
      status: "serving",
      nodes: [],
      warnings: ["spark2: no KV cache line in the engine log"],
      restarts: [{ at: "2026-12-01T10:00:00Z", causes: [HUNG] }],
    },
  };

  it("keeps keys and arguments, the same bytes in every language", () => {
    const c = KINDS["not-running"];
    const found = driftFindings(c.nb, c.st).map((d) => d.said);
    expect(JSON.stringify(found)).toBe(
      '[{"key":"serve.look.notRunning","args":{"node":"spark2","detail":{"key":"serve.look.dockerDown",' +
        '"args":{"error":"Cannot connect to the Docker daemon"}}}}]',
    );
  });

  it("tells the health part of the drift apart by the message, whatever order its arguments came in", () => {
    const dead = msg("serve.look.notRunning", { node: "spark2", detail: "container gone" });
    const asStored: Msg = { key: dead.key, args: { detail: "container gone", node: "spark2" } };
    const edited = msg("serve.look.edited", { node: "spark2", file: FILE });
    const olds = {
      bundle: b,
      allow: NOTHING_ALLOWED,
      outcome: { status: "serving" as const, nodes: [], warnings: [] },
    };
    const liveness = { maxRestarts: 5, windowS: 3600 };
    const d = decide(olds, { bundle: b, allow: NOTHING_ALLOWED, drift: [edited, asStored], health: [dead], liveness });
    expect(d.restart.map((m) => say(m, "en"))).toEqual([
      `spark2: ${FILE} edited on the node`,
      "spark2: the engine is not running (container gone)",
    ]);
    expect(d.health).toEqual([dead]);
  });

  it("upgrades version 3's English words to recorded texts that say them again, and restarts nothing for it", () => {
    const { state } = upgrade("EngineDeployment", v3);
    expect(state.stateVersion).toBe(STATE_VERSIONS.EngineDeployment);
    const en = (ms: readonly Msg[] | undefined) => (ms ?? []).map((m) => say(m, "en"));
    // Shown as words (version 5), kept as messages for the provider.
    expect(state.drift).toEqual([DEAD, HUNG]);
    expect(en(state.__run.drift)).toEqual([DEAD, HUNG]);
    expect(en(state.unknown)).toEqual(v3.unknown);
    expect(en(state.__run.findings.fatal)).toEqual(v3.__run.findings.fatal);
    expect(en(state.__run.findings.notes)).toEqual(v3.__run.findings.notes);
    expect(en(state.__run.health)).toEqual([DEAD]);
    expect(en(state.outcome?.warnings)).toEqual(v3.outcome.warnings);
    expect(en(state.outcome?.restarts?.[0]?.causes)).toEqual([HUNG]);
    expect(say(state.__run.drift?.[0] ?? msg("state.recorded", { text: "" }), "ru")).toBe(
      `${DEAD} (записано прежней версией sm121)`,
    );
    // One up rewrites it: the state's upgrade is its only change, which restarts nothing.
    const olds = fromStored({ ...v3, drift: [], __run: { ...v3.__run, health: [] } });
    const d = decide(olds, { bundle: b, allow: NOTHING_ALLOWED, drift: [] });
    expect(d.restart).toEqual([]);
    expect(d.touch.map((t) => t.kind)).toEqual(["state"]);
  });
});
