/**
 * Per-run overrides through the real Pulumi CLI on the simulated site: SM121_TIMEOUT_S and
 * SM121_MIN_MEM_GIB are refused with their name and range when bad, shown in the plan, reach this
 * run's serve (a short wait fails a slow start, a high gate stops before the start), and restart
 * nothing by themselves: they are no part of the bundle's identity. Seed 001's .env identity: a
 * new bundle whose launch is the same (proofs, the readiness wait) is checked on the running
 * engine, the state updated, nothing restarted; a changed launch restarts, and so does a file the
 * recipe mounts that was rebuilt after the engine started.
 */
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import { waitFor } from "../site/faults";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

interface RecipeOptions {
  timeoutS?: number;
  proofs?: string[];
  args?: string[];
  mounts?: string[];
}
const recipe = (o: RecipeOptions = {}) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ${JSON.stringify(o.args ?? [])}
mounts = ${JSON.stringify(o.mounts ?? [])}
[readiness]
timeout_s = ${o.timeoutS ?? 600}
proofs = ${JSON.stringify(o.proofs ?? [])}
`;
const RECIPE = recipe();
const CONFIG = "  sm121:deployments:\n    - { name: chat, recipe: chat, nodes: [spark1] }";

describe.sequential("per-run overrides", () => {
  let e: E2E;
  let n: SimNode;
  const started = () => sshOk(e.site, n, "docker inspect -f '{{.State.StartedAt}}' sm121-chat-0");
  beforeAll(async () => {
    const chat = { "chat.toml": RECIPE };
    const at = AT.site();
    e = await e2eProject({ name: "overrides", nodes: ["spark1"], ...at, recipes: chat, config: () => CONFIG });
    n = e.site.nodes[0] as SimNode;
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses a bad value with its name and the allowed range, before any node is looked at", async () => {
    const r = await e.preview({ SM121_TIMEOUT_S: "ten", SM121_MIN_MEM_GIB: "0" });
    expect(r.code).not.toBe(0);
    expect(r.all).toContain('SM121_TIMEOUT_S="ten" is not a whole number of seconds from 1 to 86400');
    expect(r.all).toContain('SM121_MIN_MEM_GIB="0" is not a number of GiB from 1 to 1024');
  });

  it("restarts nothing by itself: the bundle and its identity stay as declared", async () => {
    const before = await started();
    const up = await e.up({ SM121_TIMEOUT_S: "3600", SM121_MIN_MEM_GIB: "2" });
    expect(up.code, up.all).toBe(0);
    expect(up.all).not.toContain("restarts spark1");
    expect(await started()).toBe(before);
  });

  it("is shown in the plan, and this run's serve waits only that long", async () => {
    const env = { SM121_RESTART: "1", SM121_TIMEOUT_S: "3" };
    const plan = await e.preview(env);
    expect(plan.code, plan.all).toBe(0);
    expect(plan.all).toContain("SM121_TIMEOUT_S=3: this run waits 3 s for /v1/models (not 600 s)");
    setEngineBehaviour(n, { startDelayS: 60 });
    const up = await e.up(env);
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("did not answer 200 within 3 s");
    setEngineBehaviour(n, null);
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
  });

  it("holds this run's start at its own memory gate", async () => {
    const env = { SM121_RESTART: "1", SM121_MIN_MEM_GIB: "1024" };
    const plan = await e.preview(env);
    expect(plan.all).toContain("SM121_MIN_MEM_GIB=1024: this run's memory gate is 1024 GiB on every node (not 1 GiB)");
    const up = await e.up(env);
    expect(up.code).not.toBe(0);
    expect(up.all).toContain("below the gate of 1024 GiB");
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
  });

  it("checks a new bundle with the same launch on the running engine: the state updated, no restart", async () => {
    const before = await started();
    writeFileSync(join(e.dir, "recipes", "chat.toml"), recipe({ timeoutS: 900, proofs: ["Loading weights took"] }));
    const plan = await e.preview();
    expect(plan.code, plan.all).toBe(0);
    expect(plan.all).toContain("sm121: chat: checks, does not restart: the readiness wait, the proofs");
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    // Readiness and verify ran on the running engine, with the new wait.
    expect(up.all).toContain("chat: every node already runs this bundle; checking readiness only");
    expect(up.all).toContain("waiting up to 900 s for http://");
    expect(up.all).toMatch(/spark1: ready in [\d.]+ s; first token in \d+ ms/);
    expect(await started()).toBe(before);
    // The state holds the new bundle: the next up has nothing to do.
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
    expect(again.all).not.toContain("checks, does not restart");
    expect(await started()).toBe(before);
  });

  it("restarts for a changed launch", async () => {
    const before = await started();
    const args = ["--max-num-seqs", "4"];
    const text = recipe({ timeoutS: 900, proofs: ["Loading weights took"], args });
    writeFileSync(join(e.dir, "recipes", "chat.toml"), text);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain("restarts spark1: the rendered bundle changed (the launch on spark1)");
    expect(await started()).not.toBe(before);
  });

  it("restarts when a file its recipe mounts is rebuilt by rename after the engine started", async () => {
    const file = join(n.home, "prompt.txt");
    writeFileSync(file, "v1\n");
    const mounts = [`${file}:/prompt.txt:ro`];
    const text = recipe({ timeoutS: 900, args: ["--max-num-seqs", "4"], mounts });
    writeFileSync(join(e.dir, "recipes", "chat.toml"), text);
    expect((await e.up()).code).toBe(0);
    const before = await started();
    // Change times count in whole seconds (the rule allows the start's own second): the rebuild
    // comes in a second after that.
    await waitFor("the second after the engine's start", () => Date.now() >= Date.parse(before.trim()) + 2000);
    writeFileSync(`${file}.new`, "v2\n");
    renameSync(`${file}.new`, file);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(`restarts spark1: spark1: changed after the engine started: ${file}`);
    expect(await started()).not.toBe(before);
  });
});
