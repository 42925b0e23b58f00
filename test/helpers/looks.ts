/**
 * The recorded plan-time looks (test/fixtures/looks/): the scenarios test/e2e/looks.test.ts
 * records on the simulated site, and what test/plan-site.test.ts plans over: each scenario's
 * project (its stack file beside the shared recipes) and its look.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { loadProject, type Project } from "../../src/project";
import type { RunInputs } from "../../src/plan/inputs";
import type { SiteLook } from "../../src/plan/types";
import { REPO } from "./project";

export const LOOKS = join(REPO, "test", "fixtures", "looks");

/** SGLang in tmux (the lightest engine of the simulated site); `gb`: its checkpoint's size. */
const sglang = (model: string, gb: number, port = 30000) =>
  `engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nserved_model_name = "${model}"\n` +
  `port = ${port}\n[readiness]\ntimeout_s = 30\n[memory]\nweights_gb = ${gb}\n`;

export const RECIPES: Record<string, string> = {
  "roll.toml": sglang("roll-model", 16),
  "solo.toml": sglang("solo", 16),
  "chat.toml": sglang("chat", 16),
  "mine.toml": sglang("mine", 16),
  "big.toml": sglang("big", 400),
  // Two of them fit one node each, not together (0.6 of MemTotal each).
  "half.toml": sglang("half", 16).replace("port = 30000", 'port = 30000\nargs = ["--mem-fraction-static", "0.6"]'),
  "half2.toml": sglang("half2", 16, 31000).replace(
    "port = 31000",
    'port = 31000\nargs = ["--mem-fraction-static", "0.6"]',
  ),
  // vLLM opens --config's file while it parses its arguments: the look finds it missing.
  "broken.toml":
    'engine = "vllm"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n' +
    'args = ["--config", "/nonexistent/vllm.yaml"]\n',
  "pair.toml":
    'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\n' +
    "tp = 2\nport = 8000\n",
};

export interface Scenario {
  name: string;
  what: string;
  /** The stack's part besides the nodes. */
  config: string;
  /** The stack whose look it is (default: the one that served the site). */
  owner?: string;
  down?: string[];
}

const FILES = [
  "  sm121:gateway: { path: ~/litellm/models.yaml, format: litellm, node: n1 }",
  "  sm121:scrapeTargets: { path: ~/prometheus/sm121.json, node: n1 }",
];
const ROLL = "    - { name: roll, recipe: roll, replicas: [[n1], [n2]], spare: [n3] }";
const SOLO = "    - { name: solo, recipe: solo, nodes: [n4] }";
const stackPart = (...deployments: string[]) => [...FILES, "  sm121:deployments:", ...deployments].join("\n");

export const SCENARIOS = {
  steady: { name: "steady", what: "the stack as it serves", config: stackPart(ROLL, SOLO) },
  gone: { name: "gone", what: "solo no longer declared on protected n4", config: stackPart(ROLL) },
  moved: {
    name: "moved",
    what: "n4 now serves chat in solo's place",
    config: stackPart(ROLL, "    - { name: chat, recipe: chat, nodes: [n4] }"),
  },
  foreign: {
    name: "foreign",
    what: "another stack's run would serve mine on n1",
    config: stackPart("    - { name: mine, recipe: mine, nodes: [n1] }"),
    owner: "other",
  },
  fatal: {
    name: "fatal",
    what: "an engine that would refuse its --config file",
    config: stackPart(ROLL, SOLO, "    - { name: broken, recipe: broken, nodes: [n5] }"),
  },
  unfit: {
    name: "unfit",
    what: "a checkpoint too big for n5, and two deployments too big together on n3",
    config: stackPart(
      ROLL,
      SOLO,
      "    - { name: huge, recipe: big, nodes: [n5] }",
      "    - { name: half, recipe: half, nodes: [n3] }",
      "    - { name: half2, recipe: half2, nodes: [n3] }",
    ),
  },
  images: {
    name: "images",
    what: "a deployment's image differs between its nodes",
    config: stackPart(ROLL, SOLO, "    - { name: pair, recipe: pair, nodes: [n5, n3] }"),
  },
  faults: { name: "faults", what: "solo's engine dead, n2 and n5 down", config: stackPart(ROLL, SOLO) },
} satisfies Record<string, Scenario>;

export type ScenarioName = keyof typeof SCENARIOS;

/** The owner every recording serves for (the e2e stack `sim`), as normalized. */
export const SERVED_BY = { project: "sm121", stack: "sim", backend: "file:///state" };

/** A recorded scenario: its project (loaded as the program loads it, from its stack file) and its look. */
export function recorded(name: ScenarioName): { project: Project; look: SiteLook } {
  // A home with no ~/.ssh/config: each node's ssh block as the stack file writes it.
  const project = loadProject(LOOKS, name, undefined, { home: join(LOOKS, "no-home"), user: "ops", config: "" });
  const look = JSON.parse(readFileSync(join(LOOKS, `${name}.look.json`), "utf8")) as SiteLook;
  return { project, look };
}

/** A run of the recorded stack: a preview by default, with nothing allowed. */
export function runOf(name: ScenarioName, o: Partial<RunInputs> = {}): RunInputs {
  const s: Scenario = SCENARIOS[name];
  return {
    stack: "sim",
    dryRun: true,
    owner: { ...SERVED_BY, stack: s.owner ?? "sim" },
    allow: { protected: [], experimental: false, restart: false, takeover: [] },
    down: s.down ?? [],
    unfit: [],
    rollAll: false,
    secrets: { apiKey: false, hfToken: false },
    ...o,
  };
}

/**
 * What a look found, without the words of its findings: each message as its key (and its message
 * arguments' keys), node and deployment names as they are, any other text or number as its type.
 * The recordings are held to the look by this: the same findings for the same deployments and nodes.
 */
export function skeleton(v: unknown, names: readonly string[]): unknown {
  if (Array.isArray(v)) return v.map((x) => skeleton(x, names));
  if (v !== null && typeof v === "object") {
    const o = v as Record<string, unknown>;
    if (typeof o["key"] === "string" && Object.keys(o).every((k) => k === "key" || k === "args")) {
      const args = Object.values((o["args"] ?? {}) as Record<string, unknown>).filter((a) => typeof a === "object");
      return [o["key"], ...args.map((a) => skeleton(a, names))];
    }
    return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, skeleton(x, names)]));
  }
  if (typeof v === "string") return names.includes(v) ? v : "<text>";
  return typeof v;
}
