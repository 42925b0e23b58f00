/**
 * Updates without downtime (issue 31), through the real Pulumi CLI on the simulated site and the
 * real LiteLLM proxy: two replicas of one model (the site's `replicas:` form) roll one at a time,
 * and `sm121 bench` streaming through the proxy meanwhile sees no failed request; the engines'
 * serve and stop times on the nodes show that one replica served at every moment. The same change
 * with SM121_ROLL=all stops both at once, and the load sees it. A replica that fails its readiness
 * stops the roll, with the other still serving the old recipe.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import type { E2E } from "../helpers/project";
import { downTimes, overlapping, rollRecipe, rollSite, rollUnderLoad, ROLL_MODEL } from "../helpers/roll";
import type { RollRun, RollSite } from "../helpers/roll";
import type { LiteLLM } from "../site/litellm";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

/** Requests a second through the proxy, and how many: the load outlasts each up. */
const RATE = 5;
const REQUESTS = 200;
const counts = (run: RollRun) => {
  const b = run.bench;
  const times = `load ${JSON.stringify(run.load)}; down ${JSON.stringify(run.downs)}`;
  return `ok ${b.completed}, failed ${b.errors}, retried ${b.retried}; ${times}`;
};

describe.sequential("a rolling up behind the real LiteLLM proxy", () => {
  let site: RollSite;
  let e: E2E;
  let proxy: LiteLLM;
  let r1: SimNode;
  let r2: SimNode;
  type Lite = { model_list: Array<{ model_info: { id: string } }>; router_settings?: Record<string, unknown> };
  const gateway = () => parse(readFileSync(site.gwFile, "utf8")) as Lite;

  beforeAll(async () => {
    site = await rollSite({ name: "roll", at: AT.site(), proxyPort: AT.port(0), startDelayS: 3 });
    ({ e, proxy } = site);
    [r1, r2] = site.nodes;
  }, 300_000);
  afterAll(async () => {
    await site?.stop();
  });

  it("lists both replicas under one model_name with LiteLLM's retries and failover, and no cooldowns", () => {
    const file = gateway();
    expect(file.model_list.map((m) => m.model_info.id)).toEqual(["roll-1-r1", "roll-2-r2"]);
    const settings = { num_retries: 3, retry_after: 0, enable_weighted_failover: true, disable_cooldowns: true };
    expect(file.router_settings).toEqual(settings);
  });

  it("says the roll in the plan: the order, and how many may be down", async () => {
    writeFileSync(join(e.dir, "recipes", "roll.toml"), rollRecipe(16));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(`rolls ${ROLL_MODEL}: roll-1, then roll-2; at most 1 of 2 down`);
    expect(preview.all).toContain(`replica 2 of 2 of ${ROLL_MODEL}, rolled after roll-1 answers`);
    const all = await e.preview({ SM121_ROLL: "all" });
    const together = `restarts ${ROLL_MODEL} all at once (SM121_ROLL=all): roll-1, roll-2; all 2 down together`;
    expect(all.all).toContain(together);
  }, 240_000);

  it("rolls one replica at a time: the load through the proxy sees no failed request", async () => {
    const run = await rollUnderLoad(e, proxy, { recipe: rollRecipe(16), rate: RATE, requests: REQUESTS });
    console.log(`rolling: ${counts(run)}`);
    expect(run.up.code, run.up.all).toBe(0);
    // Both engines restarted, one after the other, while the load ran: never both down at once.
    expect(run.downs.map((d) => d.node)).toEqual(["r1", "r2"]);
    expect(overlapping(run.downs), JSON.stringify(run.downs)).toBe(false);
    // The load ran from before the first stop to after the last start.
    expect(run.load.from).toBeLessThan(Math.min(...run.downs.map((d) => d.from)));
    expect(Math.max(...run.downs.map((d) => d.to))).toBeLessThan(run.load.to);
    expect(run.bench.errors, run.bench.errorSamples.join("\n")).toBe(0);
    expect(run.bench.completed).toBe(REQUESTS);
    // The proxy retried the requests it sent to the replica that was restarting.
    expect(run.bench.retried).toBeGreaterThan(0);
    expect(gateway().model_list.map((m) => m.model_info.id)).toEqual(["roll-1-r1", "roll-2-r2"]);
  }, 400_000);

  it("with SM121_ROLL=all, stops both at once, and the load sees the failures", async () => {
    const env = { SM121_ROLL: "all" };
    const run = await rollUnderLoad(e, proxy, { recipe: rollRecipe(32), env, rate: RATE, requests: REQUESTS });
    console.log(`SM121_ROLL=all: ${counts(run)}`);
    expect(run.up.code, run.up.all).toBe(0);
    expect(overlapping(run.downs), JSON.stringify(run.downs)).toBe(true);
    expect(run.load.from).toBeLessThan(Math.min(...run.downs.map((d) => d.from)));
    expect(run.bench.errors).toBeGreaterThan(0);
  }, 400_000);

  it("stops the roll at a replica that fails its readiness; the other keeps serving the old recipe", async () => {
    const since = Date.now();
    setEngineBehaviour(r1, { mode: "never-ready" });
    writeFileSync(join(e.dir, "recipes", "roll.toml"), rollRecipe(64));
    const up = await e.up();
    expect(up.code).not.toBe(0);
    const stopped =
      `replica roll-1 (1 of 2 of ${ROLL_MODEL}) failed: the roll stops here; ` +
      "the 1 replica after it keeps the old recipe";
    expect(up.all).toContain(stopped);
    // roll-2 was not touched: its engine never stopped, and it serves the recipe of the last up.
    expect(downTimes([r2], since)).toEqual([]);
    type Resource = { urn: string; outputs?: { plan?: string; outcome?: { status: string } } };
    type Exported = { deployment: { resources: Resource[] } };
    const exported = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as Exported;
    const engine = (d: string) => exported.deployment.resources.find((r) => r.urn.endsWith(`::${d}-engine`))?.outputs;
    expect(engine("roll-2")?.plan).toContain("--max-running-requests 32");
    expect(engine("roll-2")?.outcome?.status).toBe("serving");
    expect(engine("roll-1")?.outcome?.status).toBe("failed");
    // The proxy still answers through roll-2.
    const res = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${proxy.key}` },
      body: JSON.stringify({ model: ROLL_MODEL, messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    expect(res.status).toBe(200);
    setEngineBehaviour(r1, { startDelayS: 3 });
  }, 400_000);
});
