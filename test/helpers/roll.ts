/**
 * A roll under load, as the end-to-end test and `npm run bench` both run it: two replicas of one
 * model behind the real LiteLLM proxy, `sm121 bench` streaming through the proxy at a steady rate
 * while `pulumi up` applies a recipe change that restarts both, and the engines' own serve and stop
 * times on the nodes (the fake engine's run/engine-events.jsonl).
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { benchSchema, type BenchReport } from "../../src/cli/schemas";
import { sm121 } from "../cli-helpers";
import type { SiteAt } from "../site/alloc";
import { startLiteLLM, type LiteLLM } from "../site/litellm";
import { eventually } from "../site/prometheus";
import { setEngineBehaviour, type SimNode } from "../site/site";
import { e2eProject, type E2E } from "./project";
import type { PulumiRun } from "./pulumi";

/** An SGLang recipe in a tmux session: the lightest engine of the simulated site. */
export const rollRecipe = (maxRunning: number) => `engine = "sglang"
deploy = "tmux"
model = "Qwen/Qwen3-8B"
served_model_name = "roll-model"
port = 30000
args = ["--max-running-requests", "${maxRunning}"]
[readiness]
timeout_s = 30
`;

export const ROLL_MODEL = "roll-model";

/** A time no replica served: from an engine's stop to the next engine's first served request. */
export interface Down {
  node: string;
  from: number;
  to: number;
}

/** The times each node's engines stopped and began to serve again, from `since` (ms). */
export function downTimes(nodes: readonly SimNode[], since: number): Down[] {
  return nodes.flatMap((n) => {
    const file = join(n.root, "run", "engine-events.jsonl");
    if (!existsSync(file)) return [];
    const events = readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { event: string; at: number })
      .filter((x) => x.at >= since);
    const out: Down[] = [];
    for (const [i, ev] of events.entries()) {
      if (ev.event !== "stopped") continue;
      const back = events.slice(i + 1).find((x) => x.event === "serving");
      out.push({ node: n.name, from: ev.at, to: back?.at ?? Number.POSITIVE_INFINITY });
    }
    return out;
  });
}

/** Whether two of these times overlap: a moment when none of the replicas served. */
export function overlapping(downs: readonly Down[]): boolean {
  return downs.some((a, i) => downs.slice(i + 1).some((b) => a.node !== b.node && a.from < b.to && b.from < a.to));
}

export interface RollRun {
  up: PulumiRun;
  bench: BenchReport;
  downs: Down[];
  /** When the load ran (ms): from its first request to its end. */
  load: { from: number; to: number };
}

/**
 * Applies `recipe` (written over recipes/roll.toml) with `pulumi up` while `sm121 bench` sends
 * `requests` streamed chats through the proxy at `rate` a second.
 */
export async function rollUnderLoad(
  e: E2E,
  proxy: LiteLLM,
  o: { recipe: string; env?: Record<string, string>; rate: number; requests: number },
): Promise<RollRun> {
  const since = Date.now();
  writeFileSync(join(e.dir, "recipes", "roll.toml"), o.recipe);
  const args = [
    "bench",
    "--url",
    proxy.url,
    "--model",
    ROLL_MODEL,
    "--rate",
    String(o.rate),
    "--requests",
    String(o.requests),
    "--concurrency",
    "8",
    "--max-tokens",
    "8",
    "--prompt-tokens",
    "16",
    "--json",
  ];
  const timeoutMs = (o.requests / o.rate) * 1000 + 120_000;
  const served = () => (readFileSync(proxy.log, "utf8").match(/"POST \/v1\/chat\/completions /g) ?? []).length;
  const before = served();
  const load = sm121(e, args, { env: { SM121_API_KEY: proxy.key }, timeoutMs });
  // The up starts once the load runs through the proxy (the proxy's own access log says so).
  await eventually(
    "the load through the proxy",
    () => Promise.resolve(served()),
    (n) => n > before,
  );
  const up = await e.up(o.env);
  const b = await load;
  const to = Date.now();
  if (b.stdout.trim() === "") throw new Error(`sm121 bench printed nothing (exit ${b.code}):\n${b.stderr}`);
  const bench = benchSchema().parse(JSON.parse(b.stdout));
  return { up, bench, downs: downTimes(e.site.nodes, since), load: { from: to - bench.durationS * 1000, to } };
}

export interface RollSite {
  e: E2E;
  proxy: LiteLLM;
  nodes: [SimNode, SimNode];
  /** The LiteLLM file sm121 writes, on the machine that runs Pulumi. */
  gwFile: string;
  /** Stops the proxy and the site. */
  stop(): Promise<void>;
}

export interface RollSiteOptions {
  name: string;
  /** Where the nodes are (test/site/alloc.ts; the bench's own addresses leave out the net). */
  at: Partial<SiteAt>;
  /** The LiteLLM proxy's port on 127.0.0.1. */
  proxyPort: number;
  /** How long each engine loads once the site serves. */
  startDelayS: number;
}

/**
 * Two nodes r1 and r2 serving one model as replicas (`replicas: [[r1], [r2]]`, deployments roll-1
 * and roll-2), the real LiteLLM proxy started with the file the first up wrote, and each engine
 * taking `startDelayS` to load from then on, as a real checkpoint does.
 */
export async function rollSite(o: RollSiteOptions): Promise<RollSite> {
  const recipes = { "roll.toml": rollRecipe(8) };
  const e = await e2eProject({ name: o.name, nodes: ["r1", "r2"], ...o.at, recipes, config: () => "" });
  let proxy: LiteLLM | undefined;
  const stop = async () => {
    await proxy?.stop();
    await e.stop();
  };
  try {
    const gwFile = join(e.dir, "..", "gw", "litellm.yaml");
    e.reconfigure(
      [
        `  sm121:gateway: { path: ${gwFile}, format: litellm }`,
        "  sm121:deployments:",
        "    - { name: roll, recipe: roll, replicas: [[r1], [r2]] }",
      ].join("\n"),
    );
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
    const litellm = { dir: join(e.dir, "..", "litellm"), port: o.proxyPort, config: gwFile, key: "sk-sm121-roll" };
    proxy = await startLiteLLM(litellm);
    const nodes = e.site.nodes as [SimNode, SimNode];
    for (const n of nodes) setEngineBehaviour(n, { startDelayS: o.startDelayS });
    return { e, proxy, nodes, gwFile, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
