/**
 * `keep`: `sm121 keep --interval 5` keeps one deployment serving with nobody at the keyboard: from
 * an engine killed (its container removed), one hung (SIGSTOP), and its node rebooted (test/site
 * rebootNode: sshd and Docker Engine restarted, containers stopped, a new boot id) to its
 * /v1/models answering 200 again, polled from here. Target: at most the interval plus the engine's
 * start (its time to ready at the first up) plus 5 s. Then the memory tripwire, under a real load on
 * this machine (test/helpers/machine load): from MemAvailable crossing the node's floor to the
 * engine stopped (the tripwire's own record). Target: 2 s. One node on 127.0.0.131, sshd port 2331.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sm121 } from "../test/cli-helpers";
import { e2eProject } from "../test/helpers/project";
import { KIB_PER_GIB, load, memAvailableKiB } from "../test/helpers/machine";
import { sshScript } from "../test/site/exec";
import { rebootNode } from "../test/site/faults";
import type { SimNode } from "../test/site/site";
import { ok, round, say, sleep } from "./lib/util";

export interface KeepRow {
  fault: "killed" | "hung" | "rebooted" | "tripwire";
  /** From the fault to serving again (the tripwire: to the engine stopped), s. */
  seconds: number;
  targetS: number;
}

const INTERVAL_S = 5;
const recipe = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "kept"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
[readiness]
timeout_s = 60
`;

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(url, { signal: AbortSignal.timeout(1000) })).status === 200;
  } catch {
    return false;
  }
}

export async function measureKeep(): Promise<KeepRow[]> {
  say("keep: starting 1 node (127.0.0.131:2331)");
  // The tripwire's floor a few GiB below what the machine has free now; the load crosses it last.
  const floorGiB = Math.max(2, Math.floor(memAvailableKiB() / KIB_PER_GIB) - 6);
  const e = await e2eProject({
    name: "benchkeep",
    nodes: ["kp1"],
    firstIp: 131,
    sshPort: 2331,
    recipes: { "kept.toml": recipe },
    nodeExtra: () => `      memFloorGiB: ${floorGiB}`,
    config: () =>
      [
        "  sm121:liveness: { timeout: 2, maxRestarts: 20, windowS: 3600 }",
        "  sm121:deployments:",
        "    - { name: kept, recipe: kept, nodes: [kp1] }",
      ].join("\n"),
  });
  let keeper: ChildProcess | undefined;
  let held: ReturnType<typeof load> | undefined;
  try {
    const node = e.site.nodes[0] as SimNode;
    const up = ok("keep: the first up", await e.up());
    const startS = Number(/time to ready (\d+(?:\.\d+)?) s/.exec(up.all)?.[1] ?? "0");
    const url = `http://${node.ip}:8000/v1/models`;
    const log = join(e.dir, "keep.jsonl");
    const run = sm121(e, ["keep", "--interval", String(INTERVAL_S), "--log", log], {
      env: e.pulumi.env,
      timeoutMs: 900_000,
      onSpawn: (c) => (keeper = c),
    });
    const rows: KeepRow[] = [];
    const targetS = round(INTERVAL_S + startS + 5, 1);
    const faults: Array<[KeepRow["fault"], () => Promise<unknown>]> = [
      ["killed", () => sshScript(e.site, node, "docker rm -f sm121-kept-0 >/dev/null")],
      ["hung", () => sshScript(e.site, node, "docker kill -s STOP sm121-kept-0 >/dev/null")],
      ["rebooted", () => rebootNode(e.site, node)],
    ];
    for (const [fault, inject] of faults) {
      await sleep(2000);
      const t0 = Date.now();
      await inject();
      while (!(await answers(url))) {
        if (Date.now() - t0 > 180_000) throw new Error(`keep: not serving 180 s after the engine was ${fault}`);
        await sleep(200);
      }
      const seconds = round((Date.now() - t0) / 1000, 1);
      say(`keep: ${fault}: serving again after ${seconds} s (target ${targetS} s)`);
      rows.push({ fault, seconds, targetS });
    }
    keeper?.kill("SIGTERM");
    await run;
    held = load(floorGiB * KIB_PER_GIB, 256 * 1024);
    const crossed = await held.crossed;
    const record = join(node.home, ".sm121", "deployments", "kept", "tripwire.json");
    for (let i = 0; i < 100 && !existsSync(record); i++) await sleep(100);
    const stoppedMs = (JSON.parse(readFileSync(record, "utf8")) as { stoppedMs: number }).stoppedMs;
    const seconds = round((stoppedMs - crossed) / 1000, 2);
    say(`keep: tripwire: the engine stopped ${seconds} s after MemAvailable crossed ${floorGiB} GiB`);
    rows.push({ fault: "tripwire", seconds, targetS: 2 });
    return rows;
  } finally {
    held?.end();
    keeper?.kill("SIGTERM");
    await e.stop();
  }
}

export function keepLines(rows: readonly KeepRow[]): string[] {
  const lines = [
    "",
    `keep: sm121 keep --interval ${INTERVAL_S}, nobody at the keyboard; the tripwire under a real load`,
    "  FAULT     SECONDS  TARGET (s)",
  ];
  for (const r of rows)
    lines.push(
      `  ${r.fault.padEnd(8)}  ${String(r.seconds).padEnd(7)}  ` +
        `${String(r.targetS).padEnd(5)} ${r.seconds <= r.targetS ? "met" : "missed"}`,
    );
  return lines;
}
