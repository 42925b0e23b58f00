/**
 * The plan-time look's liveness check as the node runs it: the real script (bash, curl) against
 * local engines that answer as vLLM does, serving, busy (counters moving, no token in time), hung
 * (counters still) or hung with counters that are no finite numbers. The verdict comes from the
 * script's own record.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import type { NodeBundle } from "../src/render/types";
import { LocalHost } from "../src/remote/local";
import { probeLiveness } from "../src/serve/liveness";
import { testDir } from "./helpers/tmp";

/** "broken": hung, with counters that are no finite numbers (NaN, +Inf), as Prometheus' format allows. */
type Mode = "serving" | "busy" | "hung" | "broken";
interface Engine {
  server: Server;
  nb: NodeBundle;
  /** The requests each path got. */
  asked: Record<string, number>;
}
const engines = new Map<Mode, Engine>();
const MODEL = "qwen3-8b";

async function engine(mode: Mode, template: NodeBundle): Promise<Engine> {
  const asked: Record<string, number> = {};
  let served = 0;
  const server = createServer((req, res) => {
    const path = req.url ?? "";
    asked[path] = (asked[path] ?? 0) + 1;
    if (path === "/v1/models") {
      res.end(JSON.stringify({ object: "list", data: [{ id: MODEL, object: "model" }] }));
      return;
    }
    if (path === "/metrics") {
      // A busy engine finishes other requests while ours waits in its queue.
      if (mode === "busy") served += 3;
      if (mode === "broken") {
        const counters = ["vllm:request_success_total", "vllm:generation_tokens_total"];
        res.end(counters.map((c, i) => `# TYPE ${c} counter\n${c}{model_name="m"} ${["NaN", "+Inf"][i]}\n`).join(""));
        return;
      }
      res.end(`# TYPE vllm:request_success_total counter\nvllm:request_success_total{model_name="m"} ${served}\n`);
      return;
    }
    if (mode !== "serving") return; // no answer: the script's curl gives up at its --max-time
    let body = "";
    req.on("data", (c: Buffer) => (body += c.toString()));
    req.on("end", () => {
      const model = (JSON.parse(body) as { model?: string }).model;
      res.statusCode = model === MODEL ? 200 : 404;
      res.end(JSON.stringify({ choices: [{ message: { content: "OK" } }] }));
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as AddressInfo).port;
  if (template.api === undefined) throw new Error("no API");
  const stateDir = testDir("sm121-live-");
  return { server, asked, nb: { ...template, stateDir, api: { ...template.api, host: "127.0.0.1", port } } };
}

beforeAll(async () => {
  const root = join(__dirname, "..");
  const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
  const bundles = renderSite(site, loadRecipes(join(root, "recipes"), "recipes"), { root });
  const template = bundles.flatMap((b) => b.nodes).find((n) => n.api !== undefined);
  if (template === undefined) throw new Error("the examples site serves no API");
  for (const m of ["serving", "busy", "hung", "broken"] as const) engines.set(m, await engine(m, template));
});
afterAll(() => {
  for (const e of engines.values()) {
    e.server.closeAllConnections();
    e.server.close();
  }
});

const host = new LocalHost("n1");
const get = (m: Mode) => engines.get(m) as Engine;

describe("the liveness script", () => {
  it("a token in time, for the model /v1/models lists, is ok; the counters are read once", async () => {
    const l = await probeLiveness(host, get("serving").nb, 2);
    expect(l).toMatchObject({ verdict: "ok", modelsCode: 200, completionCode: 200, progress: null });
    expect(get("serving").asked).toEqual({ "/v1/models": 1, "/metrics": 1, "/v1/chat/completions": 1 });
  });

  it("no token in time with the counters moving is busy; with the counters still, hung", async () => {
    const [busy, hung] = await Promise.all([
      probeLiveness(host, get("busy").nb, 1),
      probeLiveness(host, get("hung").nb, 1),
    ]);
    expect(busy).toMatchObject({ verdict: "busy", completionCode: 0, progress: { before: 3, after: 6 } });
    expect(hung).toMatchObject({ verdict: "hung", completionCode: 0, progress: { before: 0, after: 0 } });
  });

  it("counters that are NaN or +Inf are unknown: no token in time is then a hang, and the check holds", async () => {
    const broken = await probeLiveness(host, get("broken").nb, 1);
    expect(broken).toMatchObject({ verdict: "hung", completionCode: 0, progress: null });
  });
});
