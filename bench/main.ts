/**
 * `npm run bench`: sm121's benchmark on the simulated site, in one run. Prints a table and writes
 * bench/results/latest.json (and a dated copy, ignored by git).
 *
 *   node dist/bench/main.js [--only floor,site,scale,serve,readiness,render,chat,copies,roll,realready,keep]
 *     [--runs N] [--requests N]
 */
import { execSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";
import { REPO } from "../test/helpers/project";
import { removeTestDirs } from "../test/helpers/tmp";
import { measureChat, type ChatResult } from "./chat";
import { measureCopies, type CopyRow } from "./copies";
import { measureRoll, rollLines, type RollRow } from "./roll";
import { measureRealReady, realReadyLines, type RealReadyRow } from "./realready";
import { keepLines, measureKeep, type KeepRow } from "./keep";
import { measureFloor, openFloor, type Floor } from "./floor";
import { measureRender, type RenderResult } from "./render";
import { measureReadiness, measureServe, type ReadinessResult, type ServeCase, type ServeResult } from "./serve";
import { measureScale } from "./scale";
import { measureSite } from "./siteops";
import { measureSshCost } from "./sshcost";
import { report } from "./report";
import { targets, type Results } from "./targets";
import { benchProject } from "./lib/project";
import { deploymentsYaml } from "./lib/recipes";
import { reapStaleSites, stopOwnSites } from "./lib/sites";
import { load1, ok, say } from "./lib/util";

const SECTIONS = [
  "floor",
  "site",
  "scale",
  "serve",
  "readiness",
  "render",
  "chat",
  "copies",
  "roll",
  "realready",
  "keep",
] as const;
type Section = (typeof SECTIONS)[number];

function args(argv: string[]): { only: Set<Section>; runs: number; requests: number } {
  let only = new Set<Section>(SECTIONS);
  let runs = 3;
  let requests = 2000;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const v = argv[i + 1] ?? "";
    if (a === "--only") {
      const picked = v.split(",").filter((x) => x !== "");
      const unknown = picked.filter((x) => !(SECTIONS as readonly string[]).includes(x));
      if (unknown.length > 0)
        throw new Error(`--only: unknown section(s) ${unknown.join(", ")}; sections: ${SECTIONS.join(", ")}`);
      only = new Set(picked as Section[]);
      i++;
    } else if (a === "--runs") {
      runs = Number(v);
      i++;
    } else if (a === "--requests") {
      requests = Number(v);
      i++;
    } else
      throw new Error(
        `unknown argument ${a ?? ""}; usage: main.js [--only ${SECTIONS.join(",")}] [--runs N] [--requests N]`,
      );
  }
  if (!Number.isInteger(runs) || runs < 1) throw new Error("--runs must be a positive integer");
  if (!Number.isInteger(requests) || requests < 1) throw new Error("--requests must be a positive integer");
  return { only, runs, requests };
}

function git(cmd: string): string {
  try {
    return execSync(`git ${cmd}`, { cwd: REPO, encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

function pulumiVersion(): string {
  try {
    return execSync("pulumi version", { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return "";
  }
}

const ONE: ServeCase = { label: "1 node", deployment: "one", recipe: "bench-solo", nodes: ["s1"] };
const FOUR: ServeCase = {
  label: "4 nodes (vLLM tp4)",
  deployment: "four",
  recipe: "bench-tp4",
  nodes: ["s2", "s3", "s4", "s5"],
};

async function serveSections(o: ReturnType<typeof args>, floor: Floor, r: Results): Promise<void> {
  say("serve: starting 5 nodes (127.0.0.120-124:2320)");
  const p = await benchProject({
    name: "benchserve",
    nodes: ["s1", "s2", "s3", "s4", "s5"],
    firstIp: 120,
    sshPort: 2320,
    deployments: deploymentsYaml([]),
  });
  try {
    const first = p.e.site.nodes[0];
    if (o.only.has("serve") && first !== undefined) r.sshCost = await measureSshCost(p.e.site, first, 5);
    if (o.only.has("serve")) {
      r.one = await measureServe(p, ONE, floor, o.runs);
      r.four = await measureServe(p, FOUR, floor, o.runs);
    }
    if (o.only.has("readiness"))
      r.readiness = await measureReadiness(p, ONE, floor, o.runs, 3, r.one?.overheadMedianMs ?? Number.NaN);
    if (o.only.has("chat")) {
      p.setDeployments(deploymentsYaml([{ name: ONE.deployment, recipe: ONE.recipe, nodes: ONE.nodes }]));
      ok("chat: up", await p.up());
      const n = p.e.site.nodes[0];
      r.chat = await measureChat(`http://${n?.ip ?? "127.0.0.120"}:8000`, "qwen3-8b", o.requests);
      ok("chat: destroy", await p.destroy());
    }
  } finally {
    await p.stop();
  }
}

type AllResults = Results & {
  render?: RenderResult;
  chat?: ChatResult;
  readiness?: ReadinessResult;
  one?: ServeResult;
  four?: ServeResult;
  copies?: CopyRow[];
  roll?: RollRow[];
  realReady?: RealReadyRow[];
  keep?: KeepRow[];
};

async function sections(
  o: ReturnType<typeof args>,
  floor: Floor,
  r: AllResults,
  loads: Record<string, number>,
): Promise<void> {
  r.floor = await measureFloor(floor, o.runs);
  loads["after floor"] = load1();
  if (o.only.has("render")) {
    r.render = await measureRender(o.runs);
    loads["after render"] = load1();
  }
  if (o.only.has("site")) {
    r.site = await measureSite(o.runs, floor);
    loads["after site"] = load1();
  }
  if (o.only.has("scale")) {
    r.scale = await measureScale(o.runs);
    loads["after scale"] = load1();
  }
  if (o.only.has("serve") || o.only.has("readiness") || o.only.has("chat")) {
    await serveSections(o, floor, r);
    loads["after serve"] = load1();
  }
  if (o.only.has("copies")) {
    r.copies = await measureCopies();
    loads["after copies"] = load1();
  }
  if (o.only.has("roll")) {
    r.roll = await measureRoll();
    loads["after roll"] = load1();
  }
  if (o.only.has("realready")) {
    r.realReady = await measureRealReady();
    loads["after realready"] = load1();
  }
  if (o.only.has("keep")) {
    r.keep = await measureKeep();
    loads["after keep"] = load1();
  }
}

/**
 * SIGTERM or Ctrl-C ends the run, never its sites: every site it started is stopped (and its CPU groups
 * closed) before it exits with the signal's status. A second signal while stopping is ignored.
 */
function stopOnSignals(): void {
  let stopping = false;
  for (const [signal, status] of [
    ["SIGTERM", 143],
    ["SIGINT", 130],
  ] as const)
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      say(`${signal}: stopping the sites this run started`);
      void stopOwnSites()
        .catch((err: unknown) => say(`stopping the sites: ${err instanceof Error ? err.message : String(err)}`))
        .finally(() => {
          removeTestDirs();
          process.exit(status);
        });
    });
}

async function main(): Promise<void> {
  const o = args(process.argv.slice(2));
  stopOnSignals();
  await reapStaleSites();
  const started = new Date();
  const r: AllResults = {};
  const loads: Record<string, number> = { start: load1() };
  say("floor: an empty Pulumi project and one with a no-op dynamic resource");
  const floor = await openFloor();
  try {
    await sections(o, floor, r, loads);
  } finally {
    floor.close();
    // The projects' Pulumi homes and the rest the test helpers made (a test file removes its own).
    removeTestDirs();
  }
  const ts = targets(r);
  const lines = report(r, ts);
  if (r.copies !== undefined) {
    // Bytes out of the source of a model copy (bench/copies.ts); target 1.0x for every N.
    lines.push(
      "",
      "copies: bytes that left the source, counted on it",
      "  PEERS  PAYLOAD  SENT     RATIO  TARGET 1.0x",
    );
    for (const c of r.copies)
      lines.push(
        `  ${String(c.peers).padEnd(5)}  ${String(c.payloadBytes).padEnd(7)}  ` +
          `${String(c.sentFromSource).padEnd(7)}  ${c.ratio.toFixed(3)}  ${c.ratio <= 1.01 ? "met" : "missed"}`,
      );
  }
  if (r.roll !== undefined) lines.push(...rollLines(r.roll));
  if (r.realReady !== undefined) lines.push(...realReadyLines(r.realReady));
  if (r.keep !== undefined) lines.push(...keepLines(r.keep));
  process.stdout.write(`${lines.join("\n")}\n`);
  const meta = {
    started: started.toISOString(),
    durationS: Math.round((Date.now() - started.getTime()) / 1000),
    git: {
      head: git("rev-parse --short HEAD"),
      dirtyFiles: git("status --porcelain -- src")
        .split("\n")
        .filter((l) => l !== "").length,
    },
    node: process.version,
    pulumi: pulumiVersion(),
    cpus: cpus().length,
    loadavg1: loads,
    loadavgAtEnd: loadavg().map((x) => Math.round(x * 100) / 100),
    runs: o.runs,
    sections: [...o.only],
  };
  const json = `${JSON.stringify({ meta, ...r, targets: ts }, null, 2)}\n`;
  const dir = join(REPO, "bench", "results");
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, "latest.json"), json);
  writeFileSync(join(dir, `history-${started.toISOString().replace(/[:.]/g, "-")}.json`), json);
  const judged = ts.filter((t) => t.information !== true);
  const failed = judged.filter((t) => !t.pass).length;
  const info = ts.length - judged.length;
  process.stdout.write(
    `\n${judged.length - failed}/${judged.length} targets pass (${info} kept as information); ` +
      "wrote bench/results/latest.json\n",
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});
