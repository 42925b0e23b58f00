/** The targets: each with what was measured, the limit, the ratio to it and PASS/FAIL. */
import type { ChatResult } from "./chat";
import type { FloorResult } from "./floor";
import type { ReadinessResult, ServeResult } from "./serve";
import type { ScaleResult } from "./scale";
import type { SiteResult } from "./siteops";
import type { SshCost } from "./sshcost";
import { median, round } from "./lib/util";

export interface Target {
  target: string;
  measured: string;
  limit: string;
  /** measured / limit (for ">=" targets: limit / measured), so <= 1 passes */
  ratio: number;
  pass: boolean;
  /**
   * A number kept for information, judged against nothing: a comparison with a program no operator runs
   * (the naive one-dynamic-resource program) says where Pulumi's own time goes, not what sm121 costs.
   */
  information?: true;
}

export interface Results {
  floor?: FloorResult;
  site?: SiteResult;
  scale?: ScaleResult;
  one?: ServeResult;
  four?: ServeResult;
  readiness?: ReadinessResult;
  chat?: ChatResult;
  sshCost?: SshCost;
}

const s = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

function atMost(target: string, value: number, limit: number, shown: string, limitShown: string): Target {
  return { target, measured: shown, limit: limitShown, ratio: round(value / limit, 2), pass: value <= limit };
}

/** A ratio kept as information (no limit, never failed). */
function information(target: string, value: number, shown: string): Target {
  return { target, measured: shown, limit: "-", ratio: round(value, 2), pass: true, information: true };
}

/**
 * What the operator waits on that sm121 controls, per node of the 10-node site: the plan-time look is one
 * exec channel and at most one docker call; a no-change up adds nothing to the look; a destroy is one
 * channel.
 */
function channelTargets(site: SiteResult): Target[] {
  const worst = (op: SiteResult["preview"], f: (k: SiteResult["preview"]["counts"][number]) => number) =>
    Math.max(0, ...op.counts.map(f));
  const per = (op: SiteResult["preview"]) =>
    `${worst(op, (k) => k.channels)} channels, ${worst(op, (k) => k.docker)} docker calls (max over ` +
    `${op.counts.length} nodes)`;
  const rows: Array<[string, SiteResult["preview"], number, number]> = [
    ["pulumi preview (the look): per node <= 1 exec channel, <= 1 docker call", site.preview, 1, 1],
    ["no-change up: per node <= the look's 1 channel and 1 docker call", site.noChangeUp, 1, 1],
    ["destroy: per node <= 1 exec channel", site.destroy, 1, Number.POSITIVE_INFINITY],
  ];
  return rows.map(([target, op, channels, docker]) => {
    const ch = worst(op, (k) => k.channels);
    const d = worst(op, (k) => k.docker);
    return {
      target,
      measured: per(op),
      limit: docker === Number.POSITIVE_INFINITY ? `${channels} channel` : `${channels} channel, ${docker} docker`,
      ratio: round(Math.max(ch / channels, docker === Number.POSITIVE_INFINITY ? 0 : d / docker), 2),
      pass: ch <= channels && d <= docker && op.counts.length > 0,
    };
  });
}

/**
 * Connections per node of every serve operation: a resource operation opens exactly one per node
 * of its deployment; an up (or preview) also looks at every node of the site once at plan time
 * (convergence: drift), so a create or update is 1 + 1 on its nodes, and a no-change up at most 1.
 */
function sshTarget(cases: ServeResult[], site: SiteResult | undefined): Target {
  const bad: string[] = [];
  let worst = 0;
  let n = 0;
  for (const c of cases) {
    for (const op of c.ops) {
      const look = /^(create|update|no-change)/.test(op.op) ? 1 : 0;
      const operation = op.op.startsWith("no-change") ? 0 : 1;
      for (const k of op.counts) {
        n++;
        worst = Math.max(worst, k.accepted);
        const expected = look + (c.nodeNames.includes(k.node) ? operation : 0);
        if (k.accepted !== expected) bad.push(`${c.label} ${op.op} ${k.node}: ${k.accepted} (expected ${expected})`);
      }
    }
  }
  for (const k of site?.noChangeUp.counts ?? []) {
    n++;
    worst = Math.max(worst, k.accepted);
    if (k.accepted > 1) bad.push(`site no-change up ${k.node}: ${k.accepted}`);
  }
  return {
    target: "one SSH connection per node per resource operation (+1 for an up's plan-time look)",
    measured:
      bad.length === 0
        ? `max ${worst} over ${n} node-operations`
        : `${bad.length} of ${n} off: ${bad.slice(0, 3).join("; ")}`,
    limit: "1 per operation, + 1 look per up",
    ratio: worst,
    pass: bad.length === 0 && n > 0,
  };
}

export function targets(r: Results): Target[] {
  const out: Target[] = [];
  if (r.site !== undefined) {
    const site = r.site;
    const dyn = median(site.rounds.map((x) => x.dynamicMs));
    const floor = s(median(site.rounds.map((x) => x.floorMs)));
    const measured =
      `${site.upPerDynamic}x (median of ${site.rounds.length} rounds; ${s(site.noChangeUp.medianMs)} vs ${s(dyn)}; ` +
      `empty program ${floor}; nodes out of their CPU group: ${site.upSharedPerDynamic}x)`;
    out.push(
      information(
        "no-change up of the 10-node site / the naive one-dynamic-resource program",
        site.upPerDynamic,
        measured,
      ),
    );
    out.push(
      atMost(
        "pulumi preview of the site <= its no-change up",
        site.previewPerUp,
        1.0,
        `${site.previewPerUp}x (${s(site.preview.medianMs)} vs ${s(site.noChangeUp.medianMs)})`,
        "1.0x",
      ),
    );
    out.push(...channelTargets(site));
  }
  if (r.scale !== undefined) {
    const c = r.scale;
    const measured =
      `${c.perExtraRatio}x (${c.perExtraMs} ms vs ${c.naivePerExtraMs} ms ` +
      `per deployment from ${c.small} to ${c.large}, median of ${c.largeMs.length} rounds; ` +
      `no-change up ${s(median(c.largeMs))} vs ${s(median(c.smallMs))}: ${c.ratio}x, ` +
      `the naive program's ${c.naiveRatio}x; CPU per extra deployment: the operator's processes ` +
      `${c.perExtraCpu.operatorMs} ms vs ${c.perExtraCpu.naiveOperatorMs} ms, the nodes' ` +
      `${c.perExtraCpu.nodesMs ?? "?"} ms)`;
    out.push(information("cost per extra deployment / the naive program's", c.perExtraRatio, measured));
  }
  const overhead = (c: ServeResult) =>
    `median of up - paired floor - engine; up ${s(c.upMedianMs)}, ` +
    `floor ${s(median(c.runs.map((x) => x.floorMs)))}, engine ${s(c.engineStartMedianMs)}`;
  if (r.one !== undefined) {
    const c = r.one;
    out.push(
      atMost(
        `launcher overhead, ${c.label}`,
        c.overheadMedianMs,
        1000,
        `${s(c.overheadMedianMs)} (${overhead(c)})`,
        "1.00 s",
      ),
    );
  }
  if (r.one !== undefined && r.four !== undefined) {
    const x = r.four.overheadMedianMs / r.one.overheadMedianMs;
    const cpu =
      r.four.nodeCpuMedianMs !== null && r.one.nodeCpuMedianMs !== null
        ? `; the nodes' CPU ${s(r.four.nodeCpuMedianMs)} / ${s(r.one.nodeCpuMedianMs)} on this machine's cores`
        : "";
    const both = `${s(r.four.overheadMedianMs)} / ${s(r.one.overheadMedianMs)}`;
    const measured = `${round(x, 2)}x (${both}: ${overhead(r.four)}${cpu})`;
    out.push(atMost("launcher overhead, four nodes <= 1.2x one node", x, 1.2, measured, "1.2x"));
  }
  for (const [c, limit] of [
    [r.one, 2],
    [r.four, 3],
  ] as const) {
    const create = c?.ops.find((o) => o.op.startsWith("create"));
    if (c === undefined || create === undefined) continue;
    const worst = Math.max(...create.counts.map((k) => k.channels));
    const docker = Math.max(...create.counts.map((k) => k.docker));
    out.push(
      atMost(
        `serve channels per node, ${c.label} <= ${limit}`,
        worst,
        limit,
        `${worst} channels (max over ${create.counts.length} nodes); docker calls per node <= ${docker}`,
        String(limit),
      ),
    );
  }
  if (r.one !== undefined || r.four !== undefined)
    out.push(
      sshTarget(
        [r.one, r.four].filter((c): c is ServeResult => c !== undefined),
        r.site,
      ),
    );
  if (r.readiness !== undefined) {
    const all = [...r.readiness.runs, ...(r.one?.runs ?? []), ...(r.four?.runs ?? [])]
      .map((x) => x.noticedAfterMs)
      .filter((x): x is number => x !== null);
    const worst = all.length === 0 ? Number.POSITIVE_INFINITY : Math.max(...all);
    out.push(
      atMost(
        "readiness noticed <= 0.5 s after the engine answers (worst run)",
        worst,
        500,
        `${s(worst)} worst of ${all.length} (median ${s(r.readiness.noticedMedianMs ?? Number.NaN)} at ` +
          `startDelayS ${r.readiness.startDelayS})`,
        "0.50 s",
      ),
    );
  }
  const chat = r.chat?.runs[0];
  if (chat !== undefined) {
    out.push({
      target: "bench client >= 1000 streamed requests/s",
      measured:
        `${chat.requestsPerS} req/s (${chat.client}, c=${chat.concurrency}, ${chat.completed} ok, ` +
        `${chat.errors} errors, client CPU ${chat.clientCpuPercent}%)`,
      limit: ">= 1000 req/s",
      ratio: round(1000 / Math.max(chat.requestsPerS, 0.001), 2),
      pass: chat.requestsPerS >= 1000 && chat.errors === 0,
    });
  }
  return out;
}
