/** The printed report: one table per section, then the targets. */
import type { RenderResult } from "./render";
import type { OpCount, ServeResult } from "./serve";
import type { SiteOp } from "./siteops";
import type { Results, Target } from "./targets";
import type { NodeCount } from "../test/site/sessions";
import type { TimelineRow } from "./lib/timeline";
import { round } from "./lib/util";

export function table(head: string[], rows: Array<Array<string | number>>): string[] {
  const cells = [head, ...rows.map((r) => r.map(String))];
  const w = head.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? "").length)));
  // Numbers right-aligned, text left-aligned.
  const numeric = head.map((_, i) => i > 0 && rows.every((r) => /^(-?[\d.]+x?|-)$/.test(String(r[i] ?? "-"))));
  const line = (r: string[]) =>
    r
      .map((c, i) => (numeric[i] === true ? c.padStart(w[i] ?? 0) : c.padEnd(w[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(head), w.map((n) => "-".repeat(n)).join("  "), ...cells.slice(1).map(line)];
}

const s = (ms: number | null | undefined) =>
  ms === null || ms === undefined || Number.isNaN(ms) ? "-" : (ms / 1000).toFixed(2);
const list = (xs: number[]) => xs.map((x) => s(x)).join(" ");

/** "b1 1c/3ch" per node: connections (sshd Accepted) and exec channels. */
export function perNode(cs: NodeCount[]): string {
  const touched = cs.filter((c) => c.accepted > 0 || c.channels > 0);
  if (touched.length === 0) return "none";
  const same = touched.every(
    (c) =>
      c.accepted === touched[0]?.accepted &&
      c.channels === touched[0]?.channels &&
      c.connections === touched[0]?.connections &&
      c.docker === touched[0]?.docker,
  );
  const f = (c: NodeCount) => {
    const withChannels = c.connections !== c.accepted ? ` (${c.connections} with channels)` : "";
    return `${c.accepted}c/${c.channels}ch/${c.docker}d${withChannels}`;
  };
  if (same && touched[0] !== undefined) return `${touched.length} node(s) x ${f(touched[0])}`;
  return touched.map((c) => `${c.node} ${f(c)}`).join(", ");
}

function siteRows(ops: SiteOp[], floorMs: number | undefined): Array<Array<string | number>> {
  return ops.map((o) => [
    o.op,
    list(o.ms),
    o.floorMs === undefined ? "-" : list(o.floorMs),
    s(o.medianMs),
    o.pairedRatio !== undefined
      ? `${o.pairedRatio}x`
      : floorMs === undefined
        ? "-"
        : `${round(o.medianMs / floorMs, 2)}x`,
    `${perNode(o.counts)}${o.stable ? "" : " (varied)"}`,
  ]);
}

function opRows(c: ServeResult): Array<Array<string | number>> {
  return c.ops.map((o: OpCount) => [`${c.label}: ${o.op}`, s(o.ms), perNode(o.counts), dockerBy(o.counts), o.pulumi]);
}

/** The docker subcommands of the API node (rank 0), e.g. "ps 3, inspect 3, run 1". */
function dockerBy(cs: NodeCount[]): string {
  const c = cs[0];
  if (c === undefined || c.docker === 0) return "-";
  return Object.entries(c.dockerBy)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
}

export function profileRows(rows: TimelineRow[]): string[] {
  return table(
    ["event", "at s", "+s"],
    rows.map((r) => [r.event, s(r.atMs), s(r.deltaMs)]),
  );
}

function renderRows(r: RenderResult): string[] {
  const m = r.medians;
  return table(
    ["render: 50 deployments / 100 nodes", "median ms"],
    [
      ["in-process loadProject (site + recipes + renderSite)", m.loadProject],
      ["in-process renderSite only", m.renderSite],
      ["node -e 0 (process floor)", m.nodeStart],
      ["sm121 --help (CLI load)", m.cliHelp],
      ["sm121 render <one> --json", m.renderOneJson],
      ["sm121 validate", m.validate],
    ],
  );
}

export function report(r: Results & { render?: RenderResult }, ts: Target[]): string[] {
  const out: string[] = [];
  const floor = r.floor?.upMedianMs;
  if (r.floor !== undefined) {
    out.push("", "== 1. floor: empty Pulumi program (nodejs, main: index.js)");
    out.push(
      ...table(
        ["operation", "runs s", "median s"],
        [
          ["pulumi up", list(r.floor.upMs), s(r.floor.upMedianMs)],
          ["pulumi preview", list(r.floor.previewMs), s(r.floor.previewMedianMs)],
          [
            "pulumi up, one no-op dynamic resource (not the floor; for reference)",
            list(r.floor.dynamicUpMs),
            s(r.floor.dynamicUpMedianMs),
          ],
        ],
      ),
    );
  }
  if (r.site !== undefined) {
    out.push(
      "",
      `== 2. site: ${r.site.deployments} deployments on ${r.site.nodes} nodes (${r.site.resources}); ` +
        `the nodes' CPU: ${r.site.nodeCpu}`,
    );
    out.push(
      ...table(
        [
          "operation",
          "runs s",
          "paired floor s",
          "median s",
          "/floor",
          "per node: c/ch/d = connections/channels/docker calls",
        ],
        siteRows([r.site.firstUp, r.site.noChangeUp, r.site.preview, r.site.refresh, r.site.destroy], floor),
      ),
    );
    out.push(
      "",
      "-- interleaved rounds: the empty program, the naive one-dynamic-resource program, " +
        "the site's no-change up and preview (the nodes in a CPU group of a tenth of the weight, " +
        "see bench/lib/nodecpu.ts), and the up again with the nodes out of it",
    );
    const head = [
      "round",
      "empty s",
      "one dynamic s",
      "site up s",
      "site preview s",
      "up / dynamic",
      "preview / up",
      "up, nodes ungrouped s",
      "/ dynamic",
      "refused up s",
    ];
    out.push(
      ...table(
        head,
        r.site.rounds.map((x, i) => [
          String(i + 1),
          s(x.floorMs),
          s(x.dynamicMs),
          s(x.upMs),
          s(x.previewMs),
          `${round(x.upMs / x.dynamicMs, 2)}x`,
          `${round(x.previewMs / x.upMs, 2)}x`,
          s(x.upSharedMs),
          `${round(x.upSharedMs / x.dynamicMs, 2)}x`,
          s(x.refusedMs),
        ]),
      ),
    );
  }
  if (r.scale !== undefined) {
    const c = r.scale;
    out.push(
      "",
      `== scale: no-change up of ${c.small} and of ${c.large} one-node deployments (interleaved rounds; ` +
        `${c.largeSummary})`,
    );
    const ratio = (a: number | undefined, b: number | undefined) =>
      `${round((a ?? Number.NaN) / (b ?? Number.NaN), 2)}x`;
    out.push(
      ...table(
        ["round", `${c.small} s`, `${c.large} s`, "ratio", `naive ${c.small} s`, `naive ${c.large} s`, "naive ratio"],
        c.smallMs.map((x, i) => [
          String(i + 1),
          s(x),
          s(c.largeMs[i]),
          ratio(c.largeMs[i], x),
          s(c.naiveSmallMs[i]),
          s(c.naiveLargeMs[i]),
          ratio(c.naiveLargeMs[i], c.naiveSmallMs[i]),
        ]),
      ),
    );
    out.push(
      "the naive program: per deployment a component with one no-op dynamic resource (5 KB of inputs) " +
        "and four outputs, no node and no look (bench/floor.ts naiveSite)",
    );
    const cpu = c.perExtraCpu;
    const nodes = cpu.nodesMs === null ? "unknown (no CPU group)" : `${cpu.nodesMs} ms`;
    out.push(
      `CPU per extra deployment (medians): pulumi, the program and the provider hosts ${cpu.operatorMs} ms ` +
        `(the naive program's ${cpu.naiveOperatorMs} ms); the simulated nodes ${nodes}, which on a cluster ` +
        "each node spends on its own cores",
    );
  }
  const cases = [r.one, r.four].filter((c): c is ServeResult => c !== undefined);
  if (cases.length > 0) {
    out.push("", "== 3. serve one deployment from nothing (pulumi up after destroy)");
    out.push(
      ...table(
        [
          "case",
          "up runs s",
          "paired floor s",
          "up median",
          "engine start",
          "overhead",
          "noticed",
          "destroy",
          "nodes' CPU s",
        ],
        cases.map((c) => [
          c.label,
          list(c.runs.map((x) => x.upMs)),
          list(c.runs.map((x) => x.floorMs)),
          s(c.upMedianMs),
          s(c.engineStartMedianMs),
          s(c.overheadMedianMs),
          s(c.noticedMedianMs),
          s(c.destroyMedianMs),
          s(c.nodeCpuMedianMs),
        ]),
      ),
    );
    if (r.one !== undefined && r.four !== undefined)
      out.push(
        `four-node / one-node up: ${round(r.four.upMedianMs / r.one.upMedianMs, 2)}x   overhead = median of ` +
          "(up - floor sample taken just before it - engine start)",
      );
    out.push(
      "nodes' CPU: CPU time of every node's sshd (and what it started: sessions, the docker CLI, tmux engines) and " +
        "Docker Engine (dockerd, containerd, shims, runc, the containers) during the up; on a cluster each node has " +
        "its own, here all share the machine's cores",
    );
    if (r.sshCost !== undefined) {
      const c = r.sshCost;
      out.push(
        "",
        `-- the price of SSH here (sm121's transport, median of ${c.samples}): require("ssh2") ` +
          `${c.requireSsh2Ms} ms, connect ${c.connectMs} ms, empty channel ${c.emptyChannelMs} ms, ` +
          `channel running docker ps ${c.dockerPsChannelMs} ms`,
      );
    }
    out.push(
      "",
      "== 4. SSH per node per resource operation (c = sshd 'Accepted publickey', ch = exec channels, d = docker calls)",
    );
    out.push(...table(["operation", "wall s", "per node", "docker calls on rank 0", "pulumi"], cases.flatMap(opRows)));
    for (const c of cases) {
      out.push("", `-- profile of one fresh up, ${c.label} (pulumi -v=9 --logflow; channel times on the rank 0 node)`);
      out.push(...profileRows(c.profile));
    }
  }
  if (r.site !== undefined) {
    out.push("", "-- profile of one no-change up of the site");
    out.push(...profileRows(r.site.profileNoChange));
    out.push("", "-- what the program pays before its first resource (fresh node per row, time inside the process)");
    out.push(
      ...table(
        ["piece", "runs ms", "median ms"],
        r.site.programCost.map((c) => [c.what, c.ms.join(" "), c.medianMs]),
      ),
    );
  }
  if (r.render !== undefined) {
    out.push("", "== 5. render at site scale", ...renderRows(r.render), r.render.checked);
  }
  if (r.readiness !== undefined) {
    const x = r.readiness;
    out.push("", `== readiness: fake engine startDelayS ${x.startDelayS}, one node`);
    out.push(
      ...table(
        ["run", "up s", "floor s", "engine start s", "overhead s", "noticed after ready s", "ready -> pulumi exit s"],
        x.runs.map((u, i) => [
          String(i + 1),
          s(u.upMs),
          s(u.floorMs),
          s(u.engineStartMs),
          s(u.overheadMs),
          s(u.noticedAfterMs),
          s(u.readyToExitMs),
        ]),
      ),
    );
    out.push(
      `slow-start penalty (median overhead with the delay - median overhead without it): ${s(x.slowStartPenaltyMs)} s`,
    );
  }
  if (r.chat !== undefined) {
    out.push(
      "",
      `== 6. streamed chat against one fake engine (${r.chat.url}, ${r.chat.cpus} CPUs shared by client and engine)`,
    );
    out.push(
      ...table(
        ["client", "conc", "requests", "max_tokens", "ok", "err", "s", "req/s", "client CPU %", "e2e p50 ms"],
        r.chat.runs.map((c) => [
          c.client,
          c.concurrency,
          c.requests,
          c.maxTokens,
          c.completed,
          c.errors,
          c.durationS,
          c.requestsPerS,
          c.clientCpuPercent,
          c.e2eP50Ms ?? "-",
        ]),
      ),
    );
  }
  out.push("", "== TARGETS");
  out.push(
    ...table(
      ["target", "measured", "limit", "ratio", "result"],
      ts.map((t) => [
        t.target,
        t.measured,
        t.limit,
        t.ratio,
        t.information === true ? "info" : t.pass ? "PASS" : "FAIL",
      ]),
    ),
  );
  return out;
}
