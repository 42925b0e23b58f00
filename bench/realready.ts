/**
 * `realready`: a `pulumi up` on the real vLLM (test/site/README.md "The real vLLM"), its time to
 * ready split into the engine's part and sm121's: the engine's from its container's start (docker's
 * StartedAt) to its own line `Application startup complete.` (docker's timestamp of that line),
 * sm121's the rest of the up (the look, preflight, writes, start, the first token, verify, Pulumi).
 * One node (docker), then two (tp 2, rank 1 headless, the engine's part from the first rank's start).
 * Two nodes on 127.0.0.127-128, sshd port 2327.
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { e2eProject, type E2E } from "../test/helpers/project";
import { sshScript } from "../test/site/exec";
import { REAL_VLLM_IMAGE, TINY_MODEL } from "../test/site/realvllm";
import type { SimNode } from "../test/site/site";
import { ok, round, say } from "./lib/util";

export interface RealReadyRow {
  label: string;
  /** The whole up, s. */
  upS: number;
  /** The engine's own start, from its log, s. */
  engineS: number;
  /** The rest: sm121 and Pulumi, s. */
  sm121S: number;
}

const recipe = (tp: number) => `engine = "vllm"
deploy = "docker"
model = "${TINY_MODEL}"
served_model_name = "tiny"
image = "${REAL_VLLM_IMAGE}"
tp = ${tp}
port = 8000
args = ["--max-model-len", "512", "--enforce-eager"]
[env]
HF_HUB_OFFLINE = "1"
[readiness]
timeout_s = 900
max_model_len = 512
`;

/** ms of docker's time for the container's start and for its `Application startup complete.` line. */
async function engineSpan(e: E2E, n: SimNode, container: string): Promise<{ from: number; to: number }> {
  const out = (
    await sshScript(
      e.site,
      n,
      `docker inspect -f '{{.State.StartedAt}}' ${container}; ` +
        `docker logs -t ${container} 2>&1 | grep -m1 'Application startup complete' | cut -d' ' -f1`,
    )
  ).stdout
    .trim()
    .split("\n");
  const [from = "", to = ""] = out;
  return { from: Date.parse(from), to: Date.parse(to) };
}

async function one(e: E2E, label: string, nodes: string[], tp: number): Promise<RealReadyRow> {
  writeFileSync(join(e.dir, "recipes", "tiny.toml"), recipe(tp));
  e.reconfigure(
    ["  sm121:deployments:", `    - { name: tiny, recipe: tiny, nodes: [${nodes.join(", ")}] }`].join("\n"),
  );
  const up = ok(`realready: ${label}: up`, await e.up());
  const ranks = e.site.nodes.filter((n) => nodes.includes(n.name));
  const spans = await Promise.all(ranks.map((n, i) => engineSpan(e, n, `sm121-tiny-${i}`)));
  const from = Math.min(...spans.map((s) => s.from));
  const to = spans[0]?.to ?? Number.NaN;
  const engineS = round((to - from) / 1000, 1);
  const upS = round(up.ms / 1000, 1);
  const row = { label, upS, engineS, sm121S: round(upS - engineS, 1) };
  say(`realready: ${label}: up ${row.upS} s, the engine ${row.engineS} s, sm121 ${row.sm121S} s`);
  ok(`realready: ${label}: destroy`, await e.destroy());
  return row;
}

export async function measureRealReady(): Promise<RealReadyRow[]> {
  say("realready: starting 2 nodes (127.0.0.127-128:2327) with the real vLLM");
  const e = await e2eProject({
    name: "benchreal",
    nodes: ["q1", "q2"],
    firstIp: 127,
    sshPort: 2327,
    realVllm: true,
    config: () => "",
  });
  try {
    return [await one(e, "1 node", ["q1"], 1), await one(e, "2 nodes (tp 2)", ["q1", "q2"], 2)];
  } finally {
    await e.stop();
  }
}

export function realReadyLines(rows: readonly RealReadyRow[]): string[] {
  return [
    "",
    "realready: a pulumi up on the real vLLM, its ready time split (the engine's part from its own log)",
    "  CASE              UP s   ENGINE s  SM121 s  SM121 SHARE",
    ...rows.map(
      (r) =>
        `  ${r.label.padEnd(16)}  ${String(r.upS).padEnd(5)}  ${String(r.engineS).padEnd(8)}  ` +
        `${String(r.sm121S).padEnd(7)}  ${Math.round((100 * r.sm121S) / r.upS)}%`,
    ),
  ];
}
