/**
 * The floor: `pulumi up` (and `pulumi preview`) of an EMPTY Node.js Pulumi program, `main:
 * index.js`, nothing created, with the same CLI, language host, backend and settings as the e2e
 * projects (test/helpers/pulumi.ts). Whatever sm121 costs on top of Pulumi is measured against it.
 */
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO } from "../test/helpers/project";
import { pulumiEnv, type PulumiEnv } from "../test/helpers/pulumi";
import { median, ok, repeat, say, timed } from "./lib/util";

export interface FloorResult {
  upMs: number[];
  previewMs: number[];
  upMedianMs: number;
  previewMedianMs: number;
  /** No-change up of a program with ONE no-op dynamic resource: the floor of the mechanism sm121 uses. */
  dynamicUpMs: number[];
  dynamicUpMedianMs: number;
}

/** The head of the naive programs: the SDK and a no-op dynamic provider. */
const NOOP_PROVIDER = `"use strict";
const pulumi = require("@pulumi/pulumi");
const provider = {
  async create(inputs) { return { id: "noop", outs: inputs }; },
  async diff() { return { changes: false }; },
};
`;

/** One no-op dynamic resource: Pulumi's closure serialization and the dynamic provider plugin, nothing else. */
const DYNAMIC = `${NOOP_PROVIDER}new pulumi.dynamic.Resource(provider, "noop", { v: 1 }, {}, "bench", "Noop");
`;

/**
 * The naive program in the shape of a site of `n` one-node deployments: per deployment a component
 * with one no-op dynamic resource (5 KB of inputs, like sm121's packed bundle) and four outputs.
 * What Pulumi itself charges per deployment, without a node, a look or a real diff.
 */
export function naiveSite(n: number): string {
  return `${NOOP_PROVIDER}class Deployment extends pulumi.ComponentResource {
  constructor(name) {
    super("bench:index:Deployment", name, {}, {});
    const inputs = { bundle: "x".repeat(5000), node: name };
    const r = new pulumi.dynamic.Resource(provider, name, inputs, { parent: this }, "bench", "Noop");
    this.registerOutputs({ endpoints: r.id, servedModel: "m", status: "serving", firstToken: 1 });
  }
}
for (let i = 0; i < ${n}; i++) new Deployment("d" + i);
`;
}

export async function project(base: string, name: string, program: string): Promise<PulumiEnv> {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(
    join(dir, "Pulumi.yaml"),
    [`name: ${name}`, "runtime:", "  name: nodejs", "  options:", "    typescript: false", "main: index.js", ""].join(
      "\n",
    ),
  );
  writeFileSync(join(dir, "package.json"), `{"name":"${name}","private":true}\n`);
  writeFileSync(join(dir, "index.js"), program);
  symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"));
  const p = pulumiEnv(dir, join(base, `${name}-pulumi`));
  ok(`${name}: pulumi stack init`, await p.run(["stack", "init", "floor"]));
  // The first up creates what there is; the measured ones change nothing, like a no-change up.
  ok(`${name}: first pulumi up`, await p.run(["up", "--yes", "--skip-preview"]));
  return p;
}

/** The floor projects, kept for the whole run: other sections take a floor sample next to each of theirs. */
export interface Floor {
  up(env?: Record<string, string>): Promise<number>;
  preview(): Promise<number>;
  dynamicUp(): Promise<number>;
  close(): void;
}

export async function openFloor(): Promise<Floor> {
  const base = `/tmp/sm121-bench-floor-${process.pid}`;
  rmSync(base, { recursive: true, force: true });
  const p = await project(base, "benchfloor", '"use strict";\n// An empty Pulumi program: it creates nothing.\n');
  const d = await project(base, "benchfloordyn", DYNAMIC);
  const ms = async (what: string, e: PulumiEnv, args: string[], env: Record<string, string> = {}) =>
    (await timed(what, () => e.run(args, { env }))).ms;
  return {
    up: (env) => ms("floor: pulumi up", p, ["up", "--yes", "--skip-preview"], env),
    preview: () => ms("floor: pulumi preview", p, ["preview", "--diff"]),
    dynamicUp: () => ms("floor: dynamic pulumi up", d, ["up", "--yes", "--skip-preview"]),
    close: () => rmSync(base, { recursive: true, force: true }),
  };
}

export async function measureFloor(f: Floor, runs: number): Promise<FloorResult> {
  say("floor: pulumi up and preview of an empty program, and up of one no-op dynamic resource");
  const up = await repeat(runs, async () => ({ ms: await f.up(), value: 0 }));
  const preview = await repeat(runs, async () => ({ ms: await f.preview(), value: 0 }));
  const dyn = await repeat(runs, async () => ({ ms: await f.dynamicUp(), value: 0 }));
  return {
    upMs: up.ms,
    previewMs: preview.ms,
    upMedianMs: median(up.ms),
    previewMedianMs: median(preview.ms),
    dynamicUpMs: dyn.ms,
    dynamicUpMedianMs: median(dyn.ms),
  };
}
