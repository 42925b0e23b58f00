/**
 * What the Pulumi program pays before its first resource, piece by piece, each in a fresh Node.js
 * process (median of N; time inside the process, without Node's own start): the @pulumi/pulumi
 * entry point (which loads the Automation API eagerly), the Automation API alone, TypeScript
 * (loaded by Pulumi's closure serialization for every dynamic provider), sm121's modules, and
 * loadProject of the project (site, recipes, render).
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { REPO } from "../test/helpers/project";
import { median, say } from "./lib/util";

export interface CostRow {
  what: string;
  ms: number[];
  medianMs: number;
}

/** The modules Pulumi's Node.js run harness (cmd/run) has loaded before the program starts. */
const HARNESS = [
  "@pulumi/pulumi/cmd/run/instrumentation",
  "source-map-support/register",
  "@pulumi/pulumi/log",
  "@pulumi/pulumi/runtime/settings",
  "@pulumi/pulumi/runtime/stack",
  "@pulumi/pulumi/runtime/manifest",
  "@pulumi/pulumi/tsutils",
  "@pulumi/pulumi/errors",
];

export function measureProgramCost(projectDir: string, stack: string, runs: number): CostRow[] {
  const nm = (m: string) => JSON.stringify(join(REPO, "node_modules", m));
  const dist = (m: string) => JSON.stringify(join(REPO, "dist", "src", m));
  const harness = HARNESS.map((m) => `require(${nm(m)});`).join(" ");
  /** Time of `body` after `pre`, in one fresh process. */
  const after = (pre: string, body: string) =>
    `${pre} const t1 = process.hrtime.bigint(); ${body}; ` +
    "process.stdout.write(String(Number(process.hrtime.bigint() - t1) / 1e6)); process.exit(0)";
  const cases: Array<[string, string]> = [
    ["Pulumi's run harness modules (the floor program pays these too)", after("", harness)],
    [
      "+ require @pulumi/pulumi (index loads automation, dynamic, provider, ...)",
      after(harness, `require(${nm("@pulumi/pulumi")})`),
    ],
    ["  vs + require @pulumi/pulumi/automation alone", after(harness, `require(${nm("@pulumi/pulumi/automation")})`)],
    [
      "  vs + deep imports only (output, resource, config, dynamic, metadata)",
      after(
        harness,
        ["output", "resource", "config", "dynamic", "metadata"]
          .map((m) => `require(${nm(`@pulumi/pulumi/${m}`)})`)
          .join("; "),
      ),
    ],
    [
      "+ require typescript (closure serialization of dynamic providers)",
      after(harness, `require(${nm("typescript")})`),
    ],
    [
      "+ require sm121 modules (project, components, providers)",
      after(
        `${harness} require(${nm("@pulumi/pulumi")});`,
        `require(${dist("project")}); require(${dist("components/recipe")}); ` +
          `require(${dist("providers/gatewayFragment")})`,
      ),
    ],
    [
      "+ loadProject of this site (readSite, loadRecipes, renderSite)",
      after(
        `const p = require(${dist("project")});`,
        `p.loadProject(${JSON.stringify(projectDir)}, ${JSON.stringify(stack)})`,
      ),
    ],
  ];
  // The first dynamic resource loads serializeClosure (which requires the @pulumi/pulumi index) and TypeScript;
  // the same with Node's on-disk compile cache (NODE_COMPILE_CACHE), warmed by the first run.
  const firstDynamic = after(
    harness,
    `require(${nm("@pulumi/pulumi/runtime/closure/serializeClosure")}); require(${nm("typescript")})`,
  );
  cases.push(["+ what the first dynamic resource loads (serializeClosure, typescript)", firstDynamic]);
  const cache = join(projectDir, ".bench-compile-cache");
  say(`program cost: ${cases.length + 3} pieces x${runs}, each in a fresh node`);
  const rows = cases.map(([what, code]) => row(what, code, projectDir, runs, {}));
  row("warm-up", firstDynamic, projectDir, 1, { NODE_COMPILE_CACHE: cache });
  rows.push(
    row("  same, with NODE_COMPILE_CACHE (warm)", firstDynamic, projectDir, runs, { NODE_COMPILE_CACHE: cache }),
  );
  // The provider process: the dynamic provider plugin (cmd/dynamic-provider) loads the runtime index (automation,
  // arborist, ...); a provider plugin of sm121's own, built on @pulumi/pulumi/provider, would load this instead.
  rows.push(
    row(
      "provider process: dynamic provider plugin loads @pulumi/pulumi/runtime",
      after("", `require(${nm("@pulumi/pulumi/runtime")})`),
      projectDir,
      runs,
      {},
    ),
  );
  rows.push(
    row(
      "  vs a provider plugin on @pulumi/pulumi/provider (no closure serialization)",
      after("", `require(${nm("@pulumi/pulumi/provider")})`),
      projectDir,
      runs,
      {},
    ),
  );
  return rows;
}

function row(what: string, code: string, projectDir: string, runs: number, env: Record<string, string>): CostRow {
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(process.execPath, ["-e", code], {
      cwd: projectDir,
      encoding: "utf8",
      env: { ...process.env, ...env },
    });
    const v = Number(r.stdout.trim());
    if (r.status !== 0 || !Number.isFinite(v))
      throw new Error(`program cost "${what}": exit ${String(r.status)} ${r.stderr.slice(0, 500)}`);
    ms.push(Math.round(v));
  }
  return { what, ms, medianMs: median(ms) };
}
