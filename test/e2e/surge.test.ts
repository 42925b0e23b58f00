/**
 * A surge onto a spare group (issue 31), through the real Pulumi CLI on the simulated site: two
 * replicas of one model (`replicas: [[r1], [r2]]`) with a spare node (`spare: [s1]`). A recipe
 * change starts the new recipe on s1 first; each replica stops only once the one before answers,
 * and s1 stops once the last answers: the engines' own serve and stop times on the nodes say so. A
 * long stream to the first replica, running when its turn comes, finishes intact (the drain).
 * When the new recipe does not fit on the spare, the plan says so and the set rolls one at a time.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { downTimes, overlapping, ROLL_MODEL } from "../helpers/roll";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

/** The roll recipe with its checkpoint's size, so that the memory fit knows it on every node. */
const recipe = (maxRunning: number) => `engine = "sglang"
deploy = "tmux"
model = "Qwen/Qwen3-8B"
served_model_name = "${ROLL_MODEL}"
port = 30000
args = ["--max-running-requests", "${maxRunning}"]
[readiness]
timeout_s = 30
[memory]
weights_gb = 16
`;

interface EngineEvent {
  event: "serving" | "stopped";
  at: number;
}

/** Each node's engine events since `since` (the fake engine's run/engine-events.jsonl). */
function events(n: SimNode, since: number): EngineEvent[] {
  const text = (() => {
    try {
      return readFileSync(join(n.root, "run", "engine-events.jsonl"), "utf8");
    } catch {
      return "";
    }
  })();
  return text
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as EngineEvent)
    .filter((x) => x.at >= since);
}
const at = (n: SimNode, since: number, what: EngineEvent["event"]) => {
  return events(n, since)
    .filter((x) => x.event === what)
    .map((x) => x.at);
};

/** A streamed chat straight at an engine: its text, whole or as far as it came. */
async function stream(n: SimNode, tokens: number): Promise<{ text: string; error?: string }> {
  const res = await fetch(`http://${n.ip}:30000/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: ROLL_MODEL,
      messages: [{ role: "user", content: "hi" }],
      max_tokens: tokens,
      stream: true,
      ignore_eos: true,
    }),
  });
  let text = "";
  try {
    const dec = new TextDecoder();
    for await (const chunk of res.body as AsyncIterable<Uint8Array>) text += dec.decode(chunk, { stream: true });
    return { text };
  } catch (e) {
    return { text, error: e instanceof Error ? e.message : String(e) };
  }
}

describe.sequential("a surge onto a spare group", () => {
  let e: E2E;
  let r1: SimNode;
  let r2: SimNode;
  let s1: SimNode;
  let gwFile: string;
  type Lite = { model_list: Array<{ model_info: { id: string } }> };
  const ids = () => (parse(readFileSync(gwFile, "utf8")) as Lite).model_list.map((m) => m.model_info.id);

  beforeAll(async () => {
    e = await e2eProject({
      name: "surge",
      nodes: ["r1", "r2", "s1"],
      ...AT.site(),
      recipes: { "roll.toml": recipe(8) },
      config: () => "",
    });
    [r1, r2, s1] = e.site.nodes as [SimNode, SimNode, SimNode];
    gwFile = join(e.dir, "..", "gw", "litellm.yaml");
    e.reconfigure(
      [
        `  sm121:gateway: { path: ${gwFile}, format: litellm }`,
        "  sm121:drainS: 60",
        "  sm121:deployments:",
        "    - { name: roll, recipe: roll, replicas: [[r1], [r2]], spare: [s1] }",
      ].join("\n"),
    );
    // Ten tokens a second: a long answer is still streaming when its replica's turn comes.
    for (const n of [r1, r2, s1]) setEngineBehaviour(n, { startDelayS: 2, tokensPerSecond: 10 });
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 300_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("says the surge in the plan", async () => {
    writeFileSync(join(e.dir, "recipes", "roll.toml"), recipe(16));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(
      `surges ${ROLL_MODEL} onto s1 first: roll-spare starts the new recipe there and ` +
        "answers, then roll-1, then roll-2, each stopped only once the one before it answers; " +
        "roll-spare stops once roll-2 answers; none of 2 down",
    );
    expect(preview.all).toContain(`replica 1 of 2 of ${ROLL_MODEL}, rolled first, after the surge roll-spare answers`);
  }, 240_000);

  it("starts the new recipe on the spare first; a stream on the first replica finishes before it stops", async () => {
    const since = Date.now();
    const long = stream(r1, 200);
    const up = await e.up();
    const s = await long;
    expect(up.code, up.all).toBe(0);
    // The spare answered before the first replica stopped; each replica stopped after the one before
    // it answered again; the spare stopped after the last one answered.
    const [spareUp] = at(s1, since, "serving");
    const [spareDown] = at(s1, since, "stopped");
    const [r1Down] = at(r1, since, "stopped");
    const [r1Up] = at(r1, since, "serving");
    const [r2Down] = at(r2, since, "stopped");
    const [r2Up] = at(r2, since, "serving");
    const times = JSON.stringify({ spareUp, spareDown, r1Down, r1Up, r2Down, r2Up });
    for (const t of [spareUp, spareDown, r1Down, r1Up, r2Down, r2Up]) expect(t, times).toBeDefined();
    const ms = (a?: number, b?: number) => (a ?? 0) - (b ?? 0);
    console.log(
      `surge: the spare answered ${ms(r1Down, spareUp)} ms before roll-1 stopped and stopped ` +
        `${ms(spareDown, r2Up)} ms after roll-2 answered; the stream had ${s.text.split("data: ").length - 1} chunks`,
    );
    expect(spareUp, times).toBeLessThan(r1Down as number);
    expect(r1Up, times).toBeLessThan(r2Down as number);
    expect(r2Up, times).toBeLessThan(spareDown as number);
    expect(overlapping(downTimes([r1, r2], since))).toBe(false);
    // The stream was in flight when roll-1's turn came, and it finished whole before roll-1 stopped.
    expect(up.all).toMatch(/roll-1: waits for 1 request in flight to finish/);
    expect(s.error, s.text.slice(-200)).toBeUndefined();
    expect(s.text.trimEnd().endsWith("data: [DONE]"), s.text.slice(-200)).toBe(true);
    expect(s.text).toContain('"finish_reason":"length"');
    // The spare is free again, and the gateway file lists the replicas as before.
    expect(up.all).toContain("roll-spare stopped, s1 is free again");
    expect(ids()).toEqual(["roll-1-r1", "roll-2-r2"]);
    expect(readFileSync(gwFile, "utf8")).not.toContain("roll-spare");
  }, 400_000);

  it("rolls one at a time when the new recipe does not fit on the spare, and says why", async () => {
    writeFileSync(join(s1.root, "etc", "memory.json"), JSON.stringify({ memTotalKiB: 4 * 1024 * 1024 }));
    writeFileSync(join(e.dir, "recipes", "roll.toml"), recipe(32));
    const since = Date.now();
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain(
      `rolls ${ROLL_MODEL}: roll-1, then roll-2; at most 1 of 2 down; no surge onto s1: ` +
        "the new recipe does not fit there: deployment roll-spare cannot fit in memory",
    );
    expect(at(s1, since, "serving")).toEqual([]);
    expect(downTimes([r1, r2], since).map((d) => d.node)).toEqual(["r1", "r2"]);
    expect(overlapping(downTimes([r1, r2], since))).toBe(false);
  }, 400_000);

  it("stops the up at a surge that fails on the spare, before any replica stops (said in Russian)", async () => {
    writeFileSync(join(s1.root, "etc", "memory.json"), JSON.stringify({ memTotalKiB: 127601452 }));
    setEngineBehaviour(s1, { mode: "exit-now" });
    writeFileSync(join(e.dir, "recipes", "roll.toml"), recipe(64));
    const since = Date.now();
    const up = await e.up({ SM121_LANG: "ru" });
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(
      "surge roll-spare на s1 не удался: ни одна реплика группы не была остановлена, " +
        "все они обслуживают старый рецепт",
    );
    expect(up.all).toContain("развёртывание roll-spare не запустилось на запасном узле; шаг «готовность» не удался");
    expect(up.all).toContain("surge: запускает roll-spare на s1 с новым рецептом");
    // The plan's roll line, from the program, in the same language.
    expect(up.all).toContain(
      `сначала surge ${ROLL_MODEL} на s1: roll-spare запускает там новый рецепт и отвечает, затем roll-1, затем roll-2`,
    );
    expect(at(r1, since, "stopped")).toEqual([]);
    expect(at(r2, since, "stopped")).toEqual([]);
    setEngineBehaviour(s1, { startDelayS: 2, tokensPerSecond: 10 });
  }, 400_000);

  it("keeps the surge serving when a replica fails after it, and a destroy stops it", async () => {
    setEngineBehaviour(r1, { mode: "exit-now" });
    writeFileSync(join(e.dir, "recipes", "roll.toml"), recipe(128));
    const since = Date.now();
    const up = await e.up();
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(
      `replica roll-1 (1 of 2 of ${ROLL_MODEL}) failed: the roll stops here; the 1 replica ` +
        "after it keeps the old recipe; the surge roll-spare keeps serving the new recipe on its spare until an up " +
        "completes the roll",
    );
    // The surge answered and still serves; roll-2 was not touched.
    expect(at(s1, since, "serving")).toHaveLength(1);
    expect(at(s1, since, "stopped")).toEqual([]);
    expect(at(r2, since, "stopped")).toEqual([]);
    const destroy = await e.destroy();
    expect(destroy.code, destroy.all).toBe(0);
    expect(at(s1, since, "stopped")).toHaveLength(1);
    setEngineBehaviour(r1, { startDelayS: 2, tokensPerSecond: 10 });
  }, 400_000);
});
