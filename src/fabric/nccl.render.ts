/**
 * The link test's reading of what NCCL printed: nccl-tests' result table (`all_reduce_perf`, and
 * the torch script, which prints the same table) and the NCCL_DEBUG=INFO lines that say which
 * network NCCL chose (`NET/IB` over RDMA, `NET/Socket` over TCP). Pure: text in, facts out, so the
 * same parser reads a real Spark's output (test/fixtures/fabric/nccl-*.txt) and the simulated site's.
 */

/** One row of the table: a message size and what the all-reduce achieved with it. */
export interface BusRow {
  bytes: number;
  /** The out-of-place bus bandwidth, GB/s (the column nccl-tests names busbw). */
  busbw: number;
  busbwInPlace: number;
  algbw: number;
  /** The #wrong (or, in older nccl-tests, error) columns: "0", "N/A", or a count or error value. */
  wrong: [string, string];
}

/** The network NCCL chose. `ib` covers the internal IB transport (RoCE too) and the IBext plugins. */
export type TransportKind = "ib" | "socket" | "other";

export interface Transport {
  kind: TransportKind;
  /** As NCCL names it: `IB`, `IBext_v10`, `Socket`, ... */
  name: string;
  /** Which lines said so: the channels' `via NET/...` (what the connections use) or `Using network`. */
  from: "channel" | "network";
}

export interface LinkTestOutput {
  rows: BusRow[];
  /** Undefined when NCCL printed no INFO line naming its network (NCCL_DEBUG was not INFO). */
  transport?: Transport;
  /** The ports NCCL lists (`NET/IB : Using [0]rocep1s0f1:1/RoCE`, `NET/Socket : Using [0]enp1s0f1np1:...`). */
  devices: string[];
  /** nccl-tests' own summary line, when the run got that far. */
  avgBusBandwidth?: number;
  ncclVersion?: string;
}

/** Why a link test fails: each carries the numbers the operator sees. */
export type LinkFailure =
  | { kind: "no-result" }
  | { kind: "wrong"; bytes: number; wrong: [string, string] }
  | { kind: "socket-on-rdma"; transport: Transport }
  | { kind: "no-transport" }
  | { kind: "below-minimum"; bytes: number; busbw: number; minimum: number };

const NUMBER = /^-?\d+(\.\d+)?$/;
const TYPES = new Set([
  "int8",
  "uint8",
  "int32",
  "uint32",
  "int64",
  "uint64",
  "half",
  "float",
  "double",
  "bfloat16",
  "fp8_e4m3",
  "fp8_e5m2",
]);

function transportKind(name: string): TransportKind {
  if (name.startsWith("IB")) return "ib";
  if (name.startsWith("Socket")) return "socket";
  return "other";
}

/** A table row: size, count and type first; the last eight columns are both halves' time, algbw, busbw, #wrong. */
function rowOf(line: string): BusRow | undefined {
  const t = line.trim().split(/\s+/);
  const [size = "", count = "", type = ""] = t;
  if (!/^\d+$/.test(size) || !/^\d+$/.test(count) || !TYPES.has(type) || t.length < 11) return undefined;
  const [, algbw = "", busbw = "", w1 = "", , , busbw2 = "", w2 = ""] = t.slice(-8);
  if (![algbw, busbw, busbw2].every((v) => NUMBER.test(v))) return undefined;
  return {
    bytes: Number(size),
    busbw: Number(busbw),
    busbwInPlace: Number(busbw2),
    algbw: Number(algbw),
    wrong: [w1, w2],
  };
}

export function parseLinkTest(text: string): LinkTestOutput {
  const rows: BusRow[] = [];
  const devices = new Set<string>();
  const channels: string[] = [];
  const networks: string[] = [];
  let avg: number | undefined;
  let version: string | undefined;
  for (const line of text.split(/\r?\n/)) {
    const row = rowOf(line);
    if (row !== undefined) {
      rows.push(row);
      continue;
    }
    const via = /\bvia NET\/([A-Za-z][\w]*)\//.exec(line);
    if (via?.[1] !== undefined) channels.push(via[1]);
    const using = /NCCL INFO Using network (\S+)/.exec(line);
    if (using?.[1] !== undefined) networks.push(using[1]);
    const list = /NCCL INFO NET\/\w+ : Using (\[\d+\].*?)(?: \[RO\])?(?:; OOB .*)?$/.exec(line);
    for (const m of list?.[1]?.matchAll(/\[\d+\](\S+)/g) ?? []) if (m[1] !== undefined) devices.add(m[1]);
    const a = /^#\s*Avg bus bandwidth\s*:\s*([\d.]+)/.exec(line);
    if (a?.[1] !== undefined) avg = Number(a[1]);
    const v = /^NCCL version (\S+)/.exec(line);
    if (v?.[1] !== undefined) version ??= v[1];
  }
  // The ranks' lines together: one rank on sockets makes the whole all-reduce a socket one.
  const from = channels.length > 0 ? "channel" : "network";
  const names = from === "channel" ? channels : networks;
  const name = names.find((n) => transportKind(n) !== "ib") ?? names[0];
  return {
    rows,
    devices: [...devices],
    ...(name !== undefined && { transport: { kind: transportKind(name), name, from } }),
    ...(avg !== undefined && { avgBusBandwidth: avg }),
    ...(version !== undefined && { ncclVersion: version }),
  };
}

/** The row of the largest message size: the one the minimum is checked against. */
export function largestRow(out: LinkTestOutput): BusRow | undefined {
  return out.rows.reduce<BusRow | undefined>(
    (best, r) => (best === undefined || r.bytes > best.bytes ? r : best),
    undefined,
  );
}

/** A #wrong column counts wrong elements; the older error column (`2e-07`, `N/A`) is a tolerance, not a count. */
const wrongCount = (w: string) => (/^\d+$/.test(w) ? Number(w) : 0);

/** What fails the test: no table, wrong results, sockets where RDMA is declared, a bandwidth under the minimum. */
export function judgeLinkTest(
  out: LinkTestOutput,
  want: { rdma: boolean; minBusBandwidthGBps?: number },
): LinkFailure[] {
  const failures: LinkFailure[] = [];
  const last = largestRow(out);
  // No table still says which network the ranks chose: Socket on RDMA is the likelier cause.
  if (last === undefined) failures.push({ kind: "no-result" });
  for (const r of out.rows) {
    if (r.wrong.some((w) => wrongCount(w) > 0)) failures.push({ kind: "wrong", bytes: r.bytes, wrong: r.wrong });
  }
  if (want.rdma && last !== undefined && out.transport === undefined) failures.push({ kind: "no-transport" });
  if (want.rdma && out.transport !== undefined && out.transport.kind !== "ib")
    failures.push({ kind: "socket-on-rdma", transport: out.transport });
  const min = want.minBusBandwidthGBps;
  if (min !== undefined && last !== undefined && last.busbw < min)
    failures.push({ kind: "below-minimum", bytes: last.bytes, busbw: last.busbw, minimum: min });
  return failures;
}

/** A byte count as nccl-tests' -b/-e options write it: 8G, 128M, 64K, or bytes. */
export function sizeText(bytes: number): string {
  for (const [unit, n] of [
    ["G", 2 ** 30],
    ["M", 2 ** 20],
    ["K", 2 ** 10],
  ] as const)
    if (bytes >= n && bytes % n === 0) return `${bytes / n}${unit}`;
  return `${bytes}`;
}
