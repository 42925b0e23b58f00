/**
 * Text output of status, doctor and profiles: aligned columns that stay aligned with CJK labels
 * (wide characters take two terminal cells, as string-width measures them from Unicode's East
 * Asian Width data) and fit in 100 columns: the widest column gives way, and its cells wrap onto
 * the row's next lines, so that nothing an operator needs is cut off.
 */
import { say, t } from "../text/messages";
import { readyWords } from "../serve/phases";
import { cells, pad } from "../text/width";
import type { Health, StatusEntry, StatusNode, StatusReport } from "./schemas";
import type { DoctorReport } from "./doctorschema";

/** Terminal columns a table may use. */
export const TABLE_COLUMNS = 100;
/** A column that gives way keeps at least this many cells (or its header's width). */
const MIN_COLUMN = 12;

export { cells, pad };

/** The longest head of `s` (whole characters) that fits `width` cells, and the rest. */
function cut(s: string, width: number): [string, string] {
  let head = "";
  for (const { segment } of new Intl.Segmenter().segment(s)) {
    if (head !== "" && cells(head + segment) > width) break;
    head += segment;
  }
  return [head, s.slice(head.length)];
}

/** `s` in lines of at most `width` cells, broken at spaces; a longer word is cut where it must. */
export function wrap(s: string, width: number): string[] {
  if (cells(s) <= width) return [s];
  const lines: string[] = [];
  let line = "";
  for (const word of s.split(" ")) {
    const joined = line === "" ? word : `${line} ${word}`;
    if (cells(joined) <= width) {
      line = joined;
      continue;
    }
    if (line !== "") lines.push(line);
    let rest = word;
    while (cells(rest) > width) {
      const [head, tail] = cut(rest, width);
      lines.push(head);
      rest = tail;
    }
    line = rest;
  }
  if (line !== "") lines.push(line);
  return lines;
}

/** Column widths that fit `max` cells: the widest column shrinks first, never below its minimum. */
export function fitWidths(
  natural: readonly number[],
  minimum: readonly number[],
  max: number,
  overhead: number,
): number[] {
  const widths = [...natural];
  const total = () => overhead + widths.reduce((a, b) => a + b, 0);
  while (total() > max) {
    const order = widths
      .map((w, i) => ({ w, i }))
      .filter((x) => x.w > (minimum[x.i] ?? 0))
      .sort((a, b) => b.w - a.w);
    const widest = order[0];
    if (widest === undefined) break;
    const next = order[1]?.w ?? 0;
    // Down to the next widest column (then both shrink in turn), or as far as the excess needs.
    widths[widest.i] = Math.max(minimum[widest.i] ?? 0, next, widest.w - (total() - max));
    if (widths[widest.i] === widest.w) widths[widest.i] = widest.w - 1;
  }
  return widths;
}

/** Rows under a header, columns two cells apart, within 100 columns; a cell too wide for its column wraps. */
export function table(header: string[], rows: string[][], indent = "  ", max = TABLE_COLUMNS): string[] {
  const natural = header.map((h, i) => Math.max(cells(h), ...rows.map((r) => cells(r[i] ?? ""))));
  const minimum = header.map((h, i) => Math.min(natural[i] ?? 0, Math.max(cells(h), MIN_COLUMN)));
  const widths = fitWidths(natural, minimum, max, cells(indent) + 2 * (header.length - 1));
  const last = header.length - 1;
  const lines = (r: string[]): string[] => {
    const wrapped = header.map((_, i) => wrap(r[i] ?? "", widths[i] ?? 0));
    const height = Math.max(...wrapped.map((w) => w.length));
    return Array.from(
      { length: height },
      (_, k) =>
        indent +
        wrapped
          .map((w, i) => (i === last ? (w[k] ?? "") : pad(w[k] ?? "", widths[i] ?? 0)))
          .join("  ")
          .trimEnd(),
    );
  };
  return [...lines(header), ...rows.flatMap(lines)];
}

function stateText(e: StatusEntry): string {
  const name = e.target.name === null ? "" : ` ${e.target.name}`;
  if (e.running === null)
    return e.error !== null && e.health.checked === false && e.health.reason === "unreachable"
      ? t("status.unreachable")
      : t("status.stateUnknown");
  if (!e.health.checked && e.health.reason === "not-deployed") return t("status.notDeployed");
  if (!e.runs) return t("status.byRank0");
  if (!e.running) return t("status.down", { name });
  if (e.live?.verdict === "hung") return t("status.hung", { name, seconds: e.live.timeoutS });
  return e.startedAt === null
    ? t("status.running", { name })
    : t("status.runningSince", { name, since: e.startedAt.replace(/\.\d+Z$/, "Z") });
}

function driftText(e: StatusEntry): string {
  const d = e.drift;
  if (d === null) return e.running === null ? "?" : t("status.driftNone");
  if (d.kind === "edited") return t("status.driftEdited", { files: d.files.join(", ") });
  if (d.kind === "no-record") return t("status.driftNoRecord");
  if (d.kind === "other-bundle") return t("status.driftOtherBundle");
  if (d.kind === "newer-mount") return t("status.driftNewerMount", { files: d.files.join(", ") });
  if (d.kind === "stop-failed") return t("status.driftStopFailed");
  if (d.kind === "hung") return t("status.driftHung");
  return t("status.driftNotRunning");
}

export function healthText(h: Health): string {
  if (!h.checked) {
    if (h.reason === "protected") return t("status.healthProtected");
    if (h.reason === "no-http") return t("status.healthNoHttp");
    if (h.reason === "no-api") return t("status.healthNoApi");
    return "-";
  }
  if (h.ok) return t("status.healthOk", { models: h.models.join(",") || "-", ms: h.latencyMs });
  if (h.httpCode === 200) return t("status.healthNoList");
  return h.httpCode === 0 ? t("status.healthNoAnswer") : t("status.healthHttp", { code: h.httpCode });
}

function kvText(e: StatusEntry): string {
  if (e.kvCache === null) return "-";
  const { tokens, device } = e.kvCache;
  const what =
    tokens === null
      ? e.kvCache.line
      : device === null
        ? t("status.kvTokens", { tokens })
        : t("status.kvTokensOn", { tokens, device });
  return `${what} (${e.kvCache.source === "log" ? t("status.kvFromLog") : t("status.kvSaved")})`;
}

function nodeRow(n: StatusNode): string[] {
  if (!n.reachable) return [n.node, t("status.unreachable"), "", "", ""];
  const apps =
    n.gpuApps === null
      ? t("status.gpuAppsUnknown")
      : n.gpuApps.length === 0
        ? t("status.gpuAppsNone")
        : n.gpuApps.map((a) => `${a.pid} ${a.name}${a.usedMiB === null ? "" : ` ${a.usedMiB} MiB`}`).join("; ");
  const mem = n.memAvailableGiB === null ? "?" : `${n.memAvailableGiB} GiB`;
  const low =
    n.memAvailableGiB !== null && n.memGateGiB !== null && n.memAvailableGiB < n.memGateGiB
      ? ` ${t("status.belowGate")}`
      : "";
  return [
    n.node + (n.protected ? ` ${t("status.protectedMark")}` : ""),
    mem + low,
    n.memGateGiB === null ? "-" : `${n.memGateGiB} GiB`,
    n.watermarkScaleFactor ?? "?",
    apps,
  ];
}

export function statusText(r: StatusReport): string[] {
  const out: string[] = [];
  for (const d of r.deployments) {
    const profile = d.profile === null ? "" : `, ${t("status.profile")} ${d.profile}`;
    out.push(`${d.deployment} (${d.recipe}: ${d.engine}, ${d.deploy}${profile})`);
    const rows = d.nodes.map((e) => [
      e.node + (e.protected ? ` ${t("status.protectedMark")}` : ""),
      String(e.rank),
      stateText(e),
      driftText(e),
      healthText(e.health),
      kvText(e),
    ]);
    out.push(
      ...table(
        [
          t("status.colNode"),
          t("status.colRank"),
          t("status.colState"),
          t("status.colDrift"),
          t("status.colHealth"),
          t("status.colKv"),
        ],
        rows,
      ),
    );
    for (const e of d.nodes) {
      if (e.env !== null) {
        const edited = e.env.edited ? ` ${t("status.envEdited")}` : "";
        const line = t("status.envLine", {
          path: e.env.path,
          profile: e.env.profile ?? "?",
          rendered: e.env.rendered ?? "?",
          sha: (e.env.sha256 ?? "?").slice(0, 16),
        });
        out.push(`  ${e.node} .env: ${line}${edited}`);
      }
      if (e.ready !== null) out.push(`  ${e.node}: ${say(readyWords(e.ready))}`);
      for (const l of e.between) out.push(`  ${l}`);
      // An unreachable node's error is shown once, under nodes.
      const reached = r.nodes.find((n) => n.node === e.node)?.reachable !== false;
      if (e.error !== null && reached) out.push(`  ${e.node}: ${t("common.error")}: ${e.error}`);
    }
    // An engine that is down stays down until an up starts it (after a reboot too): say what to run.
    const down = d.nodes.filter((e) => e.runs && e.running === false).map((e) => e.node);
    if (down.length > 0) out.push(`  ${t("status.downNext", { nodes: down.join(", "), deployment: d.deployment })}`);
    out.push("");
  }
  out.push(t("status.nodes"));
  out.push(
    ...table(
      [t("status.colNode"), t("status.colMem"), t("status.colGate"), t("status.colWatermark"), t("status.colGpuApps")],
      r.nodes.map(nodeRow),
    ),
  );
  for (const n of r.nodes) {
    if (n.error !== null) out.push(`  ${n.node}: ${t("common.error")}: ${n.error}`);
    const p = n.gpuProbe;
    if (p === null) continue;
    if (!p.ran)
      out.push(
        `  ${n.node}: ${p.reason === "not-configured" ? t("status.gpuProbeNotConfigured") : t("status.unreachable")}`,
      );
    else
      out.push(
        `  ${n.node}: ${t("status.gpuProbeRan", { code: String(p.code), seconds: p.seconds })}`,
        ...p.output
          .trimEnd()
          .split("\n")
          .map((l) => `    ${l}`),
      );
  }
  if (r.nodes.some((n) => n.gpuApps !== null && n.gpuApps.length > 0)) out.push(t("status.gpuAppsNote"));
  return out;
}

export function doctorText(r: DoctorReport): string[] {
  const out: string[] = [];
  for (const n of r.nodes) {
    const head =
      n.problems > 0
        ? t("doctor.nodeProblems", { node: n.node, count: n.problems })
        : t("doctor.nodeOk", { node: n.node });
    out.push(head + (n.warnings > 0 ? ` ${t("doctor.warnings", { count: n.warnings })}` : ""));
    if (n.connect !== null) {
      out.push(`  ${t("common.error")}: ${n.connect.message}`);
      if (n.connect.fingerprint !== null)
        out.push(`  ${t("doctor.fingerprint", { fingerprint: n.connect.fingerprint })}`);
      if (n.connect.fix !== null) out.push(`  ${t("doctor.acceptKey", { command: n.connect.fix })}`);
      continue;
    }
    for (const c of n.checks) {
      const mark = c.ok ? "ok  " : c.severity === "problem" ? "FAIL" : "warn";
      const detail = c.detail === null ? "" : `: ${c.detail}`;
      out.push(`  [${mark}] ${c.check} ${c.subject}${detail}`);
      if (!c.ok && c.hint !== null) out.push(`         ${t("doctor.hint")}: ${c.hint}`);
    }
  }
  if (r.plan.length > 0) out.push(t("doctor.planRefuses"), ...r.plan.map((l) => `  ${l}`));
  out.push(r.ok ? t("doctor.allOk") : t("doctor.someProblems"));
  return out;
}
