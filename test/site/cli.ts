// The test site from the shell (compiled to dist/test/site/cli.js):
//   node dist/test/site/cli.js start --dir D --nodes spark1,spark2 [--first-ip 11] [--ssh-port 2222] [--real-vllm]
//   node dist/test/site/cli.js stop --dir D
//   node dist/test/site/cli.js engine-mode --dir D --node N --mode ok|never-ready|crash-after|exit-now|hung
//        [--start-delay-s S] [--crash-after-s S] [--tokens-per-second T] [--ignore-sigterm]
//   node dist/test/site/cli.js engine-mode --dir D --node N --reset
//   node dist/test/site/cli.js reboot --dir D --node N
import * as fs from "node:fs";
import * as path from "node:path";
import { parseArgs } from "node:util";
import { rebootNode } from "./faults";
import { findNode, loadSite, setEngineBehaviour, startSite, stopStaleSite, type EngineBehaviour } from "./site";

const USAGE = `usage: cli.js start --dir D --nodes n1,n2 [--first-ip N] [--ssh-port P] [--real-vllm]
       cli.js stop --dir D
       cli.js reboot --dir D --node N
       cli.js engine-mode --dir D --node N (--reset | --mode ok|never-ready|crash-after|exit-now|hung
              [--start-delay-s S] [--crash-after-s S] [--tokens-per-second T] [--ignore-sigterm])
`;

class CliError extends Error {}

/** The flags of one command, through Node's strict util.parseArgs; `--name` keys, booleans as "true". */
function parse(argv: string[], valued: string[], flags: string[]): Map<string, string> {
  const options: Record<string, { type: "string" | "boolean" }> = {};
  for (const v of valued) options[v.slice(2)] = { type: "string" };
  for (const f of flags) options[f.slice(2)] = { type: "boolean" };
  try {
    const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
    const out = new Map<string, string>();
    for (const [k, v] of Object.entries(values))
      if (typeof v === "string" || typeof v === "boolean") out.set(`--${k}`, String(v));
    return out;
  } catch (e) {
    throw new CliError(e instanceof Error ? e.message : String(e));
  }
}

function need(o: Map<string, string>, k: string): string {
  const v = o.get(k);
  if (v === undefined) throw new CliError(`${k} is required`);
  return v;
}

function num(o: Map<string, string>, k: string): number | undefined {
  const v = o.get(k);
  if (v === undefined) return undefined;
  if (!/^\d+(\.\d+)?$/.test(v)) throw new CliError(`${k} must be a number, got ${v}`);
  return Number(v);
}

async function run(argv: string[]): Promise<void> {
  const [cmd, ...rest] = argv;
  if (cmd === "start") {
    const o = parse(rest, ["--dir", "--nodes", "--first-ip", "--ssh-port"], ["--real-vllm"]);
    const site = await startSite({
      dir: need(o, "--dir"),
      nodes: need(o, "--nodes")
        .split(",")
        .filter((n) => n.length > 0),
      firstIp: num(o, "--first-ip"),
      sshPort: num(o, "--ssh-port"),
      realVllm: o.get("--real-vllm") === "true",
    });
    process.stdout.write(fs.readFileSync(path.join(site.dir, "site.json"), "utf8"));
    return;
  }
  if (cmd === "stop") {
    const o = parse(rest, ["--dir"], []);
    await stopStaleSite(need(o, "--dir"));
    return;
  }
  if (cmd === "reboot") {
    const o = parse(rest, ["--dir", "--node"], []);
    const site = loadSite(need(o, "--dir"));
    await rebootNode(site, findNode(site, need(o, "--node")));
    return;
  }
  if (cmd === "engine-mode") {
    const o = parse(
      rest,
      ["--dir", "--node", "--mode", "--start-delay-s", "--crash-after-s", "--tokens-per-second"],
      ["--reset", "--ignore-sigterm"],
    );
    const node = findNode(loadSite(need(o, "--dir")), need(o, "--node"));
    if (o.has("--reset")) {
      setEngineBehaviour(node, null);
      return;
    }
    const mode = need(o, "--mode");
    if (mode !== "ok" && mode !== "never-ready" && mode !== "crash-after" && mode !== "exit-now" && mode !== "hung") {
      throw new CliError(`--mode must be ok, never-ready, crash-after, exit-now or hung, got ${mode}`);
    }
    const b: EngineBehaviour = { mode };
    const delay = num(o, "--start-delay-s");
    const crash = num(o, "--crash-after-s");
    const tps = num(o, "--tokens-per-second");
    if (delay !== undefined) b.startDelayS = delay;
    if (crash !== undefined) b.crashAfterS = crash;
    if (tps !== undefined) b.tokensPerSecond = tps;
    if (o.has("--ignore-sigterm")) b.ignoreSigterm = true;
    setEngineBehaviour(node, b);
    return;
  }
  throw new CliError(cmd === undefined ? "a command is required" : `unknown command ${cmd}`);
}

export async function main(argv: string[] = process.argv.slice(2)): Promise<void> {
  try {
    await run(argv);
  } catch (err) {
    if (err instanceof CliError) {
      process.stderr.write(`test-site: ${err.message}\n${USAGE}`);
      process.exitCode = 2;
      return;
    }
    process.stderr.write(`test-site: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  }
}

if (require.main === module) void main();
