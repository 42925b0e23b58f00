/**
 * Seed 001's preflight in the render of a script recipe: the node recipe's dockerArgs applied or
 * refused, the HF cache under each mount of the cache, the overlay manifest kept with the
 * deployment's state; the files the look hashes; and the pure parts of the serve's reports (key
 * diff, step timings).
 */
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { cpSync, mkdirSync, readFileSync, renameSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { loadProject } from "../src/project";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";
import { addTimings, timingLine, type NodeOutcome } from "../src/serve/outcome";
import type { NodeModelFacts } from "../src/render/memfit";
import { addModelFact, modelFactsScript } from "../src/serve/modelprobe";
import {
  describeCheck,
  envPathOf,
  mountedPaths,
  parseProbe,
  type FailedCheck,
  type NodeState,
} from "../src/serve/probe";
import { envKeyDiff } from "../src/serve/drift";
import { clientsCut } from "../src/serve/serve";
import { envFileOf, hfCacheCheck } from "../src/render/node";
import { placeCheckpoint } from "./site/hfcache";
import { preflightScript, timed } from "../src/serve/steps";
import { errorsOf } from "./helpers/spec";
import { recordOfLine } from "../src/protocol";
import { say } from "../src/text/messages";
import { testDir } from "./helpers/tmp";

const REPO = resolve(__dirname, "..");
const NODE_RECIPE =
  "qwen38-flash: { dir: /home/ops/spark-recipes/qwen38-flash, container: qwen38-flash, ownedMounts: " +
  "[/workspace/mtp.py] }";

/** A checkout of the examples site, with `edit` applied to the site text. */
function checkout(edit: (site: string) => string): string {
  const dir = testDir("sm121-preflight-");
  cpSync(join(REPO, "recipes"), join(dir, "recipes"), { recursive: true });
  cpSync(join(REPO, "test", "fixtures", "overlays", "mtp-r3"), join(dir, "overlays", "mtp-r3"), { recursive: true });
  writeFileSync(
    join(dir, "Pulumi.ex.yaml"),
    edit(readFileSync(join(REPO, "test", "fixtures", "sites", "examples.yaml"), "utf8")),
  );
  return dir;
}

function best(edit: (site: string) => string): { b: DeploymentBundle; nb: NodeBundle; env: string } {
  const p = loadProject(checkout(edit), "ex");
  const b = p.bundles.find((d) => d.profile === "best") as DeploymentBundle;
  const nb = b.nodes[0] as NodeBundle;
  return { b, nb, env: nb.files.find((f) => f.path.endsWith("/.env"))?.content ?? "" };
}

const withArgs = (args: string) => (site: string) =>
  site.replace(NODE_RECIPE, NODE_RECIPE.replace(" }", `, dockerArgs: "${args}" }`));

describe("a node recipe's dockerArgs", () => {
  it("are added to EXTRA_DOCKER_ARGS after the profile's pairs", () => {
    const { env } = best(withArgs("-e NCCL_DEBUG=WARN -v /data/cache:/cache:ro"));
    expect(env).toMatch(
      /^EXTRA_DOCKER_ARGS="-e VLLM_USE_V2_MODEL_RUNNER=1 .* -e NCCL_DEBUG=WARN -v \/data\/cache:\/cache:ro"$/m,
    );
  });

  it("change the bundle identity, so an up applies them", () => {
    expect(best(withArgs("-e NCCL_DEBUG=WARN")).b.identity).not.toBe(best((s) => s).b.identity);
  });

  it("are refused, naming the site field, when they are not -e/-v pairs", () => {
    const errors = errorsOf(() => best(withArgs("-e NCCL_DEBUG=WARN --privileged")));
    expect(errors).toHaveLength(1);
    // The field's line in the site file; the column is the field's (where the site's locator finds
    // it, which may be Pulumi's config rather than this file) plus the word's place in the value.
    const lines = readFileSync(join(REPO, "test", "fixtures", "sites", "examples.yaml"), "utf8").split("\n");
    const line = lines.findIndex((l) => l.includes(NODE_RECIPE)) + 1;
    const key = withArgs("-e NCCL_DEBUG=WARN --privileged")(lines[line - 1] ?? "").indexOf("dockerArgs") + 1;
    const m = new RegExp(
      `^Pulumi\\.ex\\.yaml:${line}:(\\d+): sm121:nodes\\.flash-best\\.recipes\\.qwen38-flash\\.dockerArgs: `,
    ).exec(errors[0] ?? "");
    expect(m, errors[0]).not.toBeNull();
    expect(Number(m?.[1])).toBe(key + "-e NCCL_DEBUG=WARN ".length);
    expect(errors[0]).toContain("`--privileged` is not part of a -e or -v pair");
  });

  it("are refused when they set what the profile sets: they add, never replace", () => {
    const errors = errorsOf(() => best(withArgs("-e TRITON_CACHE_DIR=/elsewhere")));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain("-e TRITON_CACHE_DIR=/elsewhere sets TRITON_CACHE_DIR, which the profile also sets");
    expect(errors[0]).toContain("never replace a pair of the profile");
  });

  it("are refused when they mount a path that start.sh owns", () => {
    expect(errorsOf(() => best(withArgs("-v /x/mtp.py:/workspace/mtp.py:ro"))).join("\n")).toContain(
      "which start.sh mounts itself",
    );
  });
});

describe("the HF cache check of a script recipe", () => {
  it("looks for MODEL under HF_HOME and under every -v onto the container's cache: fatal, at every plan", () => {
    const { nb } = best(withArgs("-v /data/hf:/root/.cache/huggingface"));
    const checks = nb.preflight.filter((c) => c.kind === "hf-cache");
    expect(checks.map((c) => c.subject)).toEqual([
      "/home/ops/.cache/huggingface/hub/models--Qwen--Qwen3.8-Flash-Next",
      "/data/hf/hub/models--Qwen--Qwen3.8-Flash-Next",
    ]);
    expect(checks.every((c) => c.fatal && c.atPlan === true)).toBe(true);
    const fix = "fix: on flash-best run `HF_HOME=/data/hf hf download Qwen/Qwen3.8-Flash-Next --revision main`";
    expect(checks[1]?.why).toContain(`${fix}, or set sm121:modelCache: keep`);
  });

  it("leaves HF_HOME to sm121:modelCache when it brings the model: a check of the up, not of the plan", () => {
    const { nb } = best((s) => s.replace("config:\n", "config:\n  sm121:modelCache: keep\n"));
    const checks = nb.preflight.filter((c) => c.kind === "hf-cache");
    expect(checks.map((c) => [c.fatal, c.atPlan])).toEqual([[false, undefined]]);
    expect(checks[0]?.why).toContain("sm121:modelCache brings it before the start");
  });

  it("uses start.sh's default cache when the node sets no HF_HOME", () => {
    const { nb } = best((s) =>
      s.replace("env: { HF_HOME: /home/ops/.cache/huggingface, BIND: 198.51.100.11", "env: { BIND: 198.51.100.11"),
    );
    expect(nb.preflight.filter((c) => c.kind === "hf-cache").map((c) => c.subject)).toEqual([
      "~/.cache/huggingface/hub/models--Qwen--Qwen3.8-Flash-Next",
    ]);
  });
});

describe("an overlay's manifest.json", () => {
  it("is written unchanged into the deployment's state dir on the node", () => {
    const { nb } = best((s) =>
      s.replace(
        "- { recipe: qwen38-flash, profile: best, nodes: [flash-best] }",
        "- { recipe: qwen38-flash, profile: best, nodes: [flash-best], overlay: overlays/mtp-r3, overlayWins: true }",
      ),
    );
    const manifest = nb.files.find((f) => f.path === `${nb.stateDir}/manifest.json`);
    expect(manifest?.content).toBe(
      readFileSync(join(REPO, "test", "fixtures", "overlays", "mtp-r3", "manifest.json"), "utf8"),
    );
    expect(manifest?.backup).toBe(false);
  });

  it("is not written without an overlay", () => {
    const { nb } = best((s) => s);
    expect(nb.files.some((f) => f.path.endsWith("/manifest.json"))).toBe(false);
  });
});

describe("the preflight's .env key diff", () => {
  const { nb } = best((s) => s);
  const state = (envText: string | undefined) => ({ ...parseProbe([]), ...(envText !== undefined && { envText }) });

  it("names changed, added and removed keys from the node's .env to the render, never a secret", () => {
    const keys = nb.envKeys ?? {};
    const onNode = Object.entries(keys)
      .filter(([k]) => k !== "MODEL")
      .map(([k, v]) => `${k}="${k === "MAX_NUM_SEQS" ? "2" : v}"`);
    const diff = envKeyDiff(nb, state(`${onNode.join("\n")}\nOLD_KEY="x"\nHF_TOKEN="hf_secret"\n`));
    expect(diff === undefined ? undefined : say(diff, "en")).toBe(
      `.env keys, node -> render: MAX_NUM_SEQS 2 -> ${keys["MAX_NUM_SEQS"] ?? ""}, MODEL added ` +
        "(Qwen/Qwen3.8-Flash-Next), OLD_KEY removed",
    );
  });

  it("says nothing when the keys are the same or the node has no .env", () => {
    const same = Object.entries(nb.envKeys ?? {})
      .map(([k, v]) => `${k}="${v}"`)
      .join("\n");
    expect(envKeyDiff(nb, state(`# a comment\n${same}\n`))).toBeUndefined();
    expect(envKeyDiff(nb, state(undefined))).toBeUndefined();
  });
});

describe("step timings", () => {
  it("come from the node as records, in the order the steps ran, and read as one line", () => {
    const out = execFileSync(
      "bash",
      ["-c", [timed("stop", "sleep 0.2"), timed("write", "true"), timed("start", ":")].join("\n")],
      { encoding: "utf8" },
    );
    const records = out.split("\n").flatMap((l) => recordOfLine(l) ?? []);
    const node: NodeOutcome = { node: "n", rank: 0, status: "serving", identity: "", backups: [], restarted: false };
    addTimings(node, records);
    // `:` is no step: it gets no record.
    expect(node.timings?.map((t) => t.step)).toEqual(["stop", "write"]);
    expect(node.timings?.every((t) => t.s >= 0)).toBe(true);
    const line = timingLine([
      { step: "stop", s: 0.4 },
      { step: "readiness", s: 25 },
    ]);
    expect(say(line, "en")).toBe("stop 0.4 s, readiness 25.0 s, total 25.4 s");
    // The step names are the steps' own; the rest is the reader's language.
    expect(say(line, "ru")).toBe("stop 0.4 с, readiness 25.0 с, всего 25.4 с");
  });
});

describe("the watched files of a node's state", () => {
  const { nb } = best((s) => s);
  const dir = testDir("sm121-watch-");
  const names = ["plain", "a b", "back\\slash", "new\nline", "dir", "missing"];
  for (const n of names.slice(0, 4)) writeFileSync(join(dir, n), `content of ${n}`);
  mkdirSync(join(dir, "dir"));
  const watch = names.map((n) => join(dir, n));

  it("carry each file's sha256 and change time, from one stat and one sha256sum, whatever the names", () => {
    const script = preflightScript(nb, watch, undefined, { checks: false, runStatus: false, clients: false });
    const out = execFileSync("bash", ["-c", `set -euo pipefail\n${script}`], {
      encoding: "utf8",
      env: { ...process.env, HOME: dir },
    });
    const records = out.split("\n").flatMap((l) => recordOfLine(l) ?? []);
    const files = parseProbe(records).files;
    const expected = Object.fromEntries(
      names.slice(0, 5).map((n) => {
        const p = join(dir, n);
        const sha256 = n === "dir" ? "" : createHash("sha256").update(readFileSync(p)).digest("hex");
        return [p, { sha256, ctime: Math.floor(statSync(p).ctimeMs / 1000) }];
      }),
    );
    // A directory (a mount source) has a change time and no sha256; a missing file has no record.
    expect(files).toEqual(expected);
    expect(script.match(/\bsha256sum\b/g)).toHaveLength(2);
  });

  it("leave out the open client connections at plan time, which only the serve's preflight counts", () => {
    expect(preflightScript(nb, watch, undefined, { checks: false, clients: false })).not.toMatch(/\bss\b/);
    expect(preflightScript(nb, watch, undefined)).toContain('ss -Htn state established "( sport = :8000 )"');
  });

  it("are said only of an engine a restart stops: one that does not run has none to cut", () => {
    const { b } = best((s) => s);
    const st = (running: boolean, clients: number): NodeState => ({
      failed: [],
      running,
      others: [],
      holders: [],
      files: {},
      clients,
    });
    expect(clientsCut(b, [st(true, 2)]).map((m) => say(m, "en"))).toEqual([
      `${b.nodes[0]?.node}: this restart cuts 2 open client connection(s) on port 8000`,
    ]);
    expect(clientsCut(b, [st(false, 2)])).toEqual([]);
    expect(clientsCut(b, [st(true, 0)])).toEqual([]);
  });
});

describe("the checkpoint facts of a node's HF cache", () => {
  const { nb } = best((s) => s);
  const repo = join(testDir("sm121-hfcache-"), "models--org--m");
  const snapshot = (rev: string, layers: number, mtimeS: number) => {
    const dir = join(repo, "snapshots", rev);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "config.json"), JSON.stringify({ num_hidden_layers: layers }));
    writeFileSync(join(dir, "model.safetensors"), "x".repeat(layers));
    utimesSync(dir, mtimeS, mtimeS);
  };
  snapshot("aaa", 1, 1_700_000_000);
  snapshot("bbb", 2, 1_700_000_100);
  snapshot("ccc", 3, 1_700_000_050);
  const facts = (): NodeModelFacts => {
    const script = modelFactsScript({ ...nb, preflight: [{ kind: "hf-cache", subject: repo, why: "", fatal: false }] });
    const out = execFileSync("bash", ["-c", `set -euo pipefail\n${script}`], { encoding: "utf8" });
    const f: NodeModelFacts = {};
    for (const r of out.split("\n").flatMap((l) => recordOfLine(l) ?? [])) addModelFact(f, r);
    return f;
  };

  it("come from the snapshot refs/main names, else from the newest snapshot, as ls -t orders them", () => {
    expect(facts()).toMatchObject({ config: { num_hidden_layers: 2 }, weightsBytes: 2 });
    mkdirSync(join(repo, "refs"));
    writeFileSync(join(repo, "refs", "main"), "ccc\n");
    expect(facts()).toMatchObject({ config: { num_hidden_layers: 3 }, weightsBytes: 3 });
  });
});

describe("the HF-cache preflight on a node", () => {
  const home = testDir("sm121-hfcheck-");
  const { nb } = best((s) => s);
  const repo = "org/tiny";
  const index = JSON.stringify({ weight_map: { a: "model-1.safetensors", b: "model-2.safetensors" } });
  const check = hfCacheCheck("flash-best", home, repo, "main", { fatal: true, why: "MODEL of the profile" });
  const failed = () => {
    const node = { ...nb, preflight: [check], status: ":", stateDir: join(home, "state") };
    const script = preflightScript(node, [], undefined, { clients: false });
    const res = spawnSync("bash", ["-c", script], { encoding: "utf8" });
    const records = res.stdout.split("\n").flatMap((l) => recordOfLine(l) ?? []);
    // The HF-cache check's findings (the node's Docker Engine is no part of this test).
    return parseProbe(records).failed.filter((f) => f.check === "hf-cache");
  };

  it("names what a missing checkpoint lacks, the directory and the fix", () => {
    const f = failed();
    expect(f).toHaveLength(1);
    expect(say(describeCheck(f[0] as FailedCheck), "en")).toBe(
      "org/tiny@main is not complete in the HF cache " +
        `${home}/hub/models--org--tiny: ` +
        "no refs/main: the revision was never downloaded here (MODEL of the profile; " +
        `fix: on flash-best run \`HF_HOME=${home} hf download org/tiny --revision main\`, ` +
        "or set sm121:modelCache: keep and the up brings it)",
    );
  });

  it("matches the snapshot against its index, as the model cache does: a shard the index names is missing", () => {
    const files = { "model.safetensors.index.json": index, "model-1.safetensors": "1", "config.json": "{}" };
    const dir = placeCheckpoint(home, repo, files);
    const said = () => say(describeCheck(failed()[0] as FailedCheck), "en");
    expect(said()).toContain(`${home}/hub/models--org--tiny: snapshots/`);
    expect(said()).toContain("/model-2.safetensors: named by model.safetensors.index.json, not in the snapshot");
    placeCheckpoint(home, repo, { "model-2.safetensors": "2" });
    expect(failed()).toEqual([]);
    // A blob cut short (a download stopped half-way) is no checkpoint.
    const blob = createHash("sha256").update("2").digest("hex");
    renameSync(join(dir, "blobs", blob), join(dir, "blobs", `${blob}.incomplete`));
    expect(said()).toContain(`its blob blobs/${blob} is missing (a download or copy was cut short)`);
  });
});

describe("the node's .env", () => {
  it("is found by one rule: a script recipe's file named .env; no other bundle has one", () => {
    const { nb } = best((s) => s);
    const env = envFileOf(nb);
    expect(env?.path).toMatch(/\/\.env$/);
    expect(env?.mode).toBe(0o600);
    expect(envPathOf(nb)).toBe(env?.path);
    // DGPP's sibling .env is no node .env: its bundle has no profile keys.
    const dgppLike = { ...nb, envKeys: undefined, files: [{ ...nb.files[0], path: "~/dgpp/configs/x/.env" }] };
    expect(envFileOf(dgppLike)).toBeUndefined();
  });

  it("and the mount sources the look watches are the checks marked so, whatever their words", () => {
    const { nb } = best(withArgs("-v /srv/cache:/cache"));
    const check = nb.preflight.find((c) => c.subject === "/srv/cache");
    expect(check).toMatchObject({ kind: "file", mountSource: true });
    expect(mountedPaths(nb)).toContain("/srv/cache");
    const reworded = { ...nb, preflight: nb.preflight.map((c) => ({ ...c, why: "anything" })) };
    expect(mountedPaths(reworded)).toContain("/srv/cache");
  });
});
