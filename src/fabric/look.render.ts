/**
 * The fabric's read-only look at a node: one script prints what the node's own tools say, of what
 * the node's fabric needs (`ip -o -4 addr show`, `ip -o link show`, `rdma link show`, `ibdev2netdev`
 * and `show_gids` where present, the RDMA device directory, `ulimit -l`, the image's ID), each under
 * a marker line, and pure parsers read their real output formats.
 */
import { nodePath, quote } from "../text/shell";

export interface Addr {
  iface: string;
  address: string;
  prefix: number;
}
export interface Link {
  iface: string;
  up: boolean;
}
export interface RdmaLink {
  hca: string;
  port: number;
  state: string;
  physical: string;
  netdev?: string;
}
export interface Gid {
  hca: string;
  port: number;
  index: number;
  ipv4?: string;
  version: string;
  netdev?: string;
}

export interface FabricFacts {
  addrs: Addr[];
  links: Link[];
  rdma: RdmaLink[];
  /** ibdev2netdev's lines, where the node has it: the port and its netdev and state. */
  ibdev: Array<{ hca: string; port: number; netdev: string; up: boolean }>;
  gids: Gid[];
  /** The entries of the RDMA device directory, or undefined when it does not exist. */
  devices?: string[];
  /** `ulimit -l`: a number of KiB, or "unlimited". */
  memlock: string;
  /** The image's ID (docker deployments), null when the node lacks the image. */
  imageId?: string | null;
}

const SECTIONS = ["ip-addr", "ip-link", "rdma", "ibdev2netdev", "show_gids", "devices", "memlock", "image"] as const;
/** A marked part of the look's output. */
type Marked = (typeof SECTIONS)[number];
/** What the node's fabric may ask of it; the image's ID is the deployment's question, not the fabric's. */
export type Section = Exclude<Marked, "image">;

/** Each fabric section's command; `devices` is the node's RDMA device directory. */
function command(s: Section, devices: string): string {
  switch (s) {
    case "ip-addr":
      return "ip -o -4 addr show 2>/dev/null || true";
    case "ip-link":
      return "ip -o link show 2>/dev/null || true";
    case "rdma":
      return "rdma link show 2>/dev/null || true";
    case "ibdev2netdev":
      return "if command -v ibdev2netdev >/dev/null 2>&1; then ibdev2netdev 2>/dev/null || true; fi";
    case "show_gids":
      return "if command -v show_gids >/dev/null 2>&1; then show_gids 2>/dev/null || true; fi";
    case "devices":
      return `if [ -d ${nodePath(devices)} ]; then ls -1 ${nodePath(devices)}; else echo '@absent'; fi`;
    case "memlock":
      return "ulimit -l";
  }
}

/**
 * The look's script: the fabric sections asked for, then the image's ID where the deployment's image
 * is compared, each under its marker line (nothing asked: the empty script).
 */
export function fabricLookScript(wants: ReadonlySet<Section>, devices: string, image: string | undefined): string {
  const mark = (s: string) => `echo '@sm121-fabric ${s}'`;
  const lines = SECTIONS.flatMap((s) => (s !== "image" && wants.has(s) ? [mark(s), command(s, devices)] : []));
  if (image !== undefined) {
    lines.push(mark("image"), `docker image inspect --format '{{.Id}}' ${quote(image)} 2>/dev/null || echo '@absent'`);
  }
  return lines.join("\n");
}

function sections(out: string): Map<Marked, string[]> {
  const m = new Map<Marked, string[]>();
  let cur: string[] | undefined;
  for (const line of out.split("\n")) {
    const s = /^@sm121-fabric (\S+)$/.exec(line)?.[1];
    if (s !== undefined && (SECTIONS as readonly string[]).includes(s)) m.set(s as Marked, (cur = []));
    else if (line.trim() !== "") cur?.push(line);
  }
  return m;
}

/** `2: enp1s0f1np1    inet 192.168.100.11/24 brd 192.168.100.255 scope global enp1s0f1np1\ ...` */
export function parseIpAddr(lines: readonly string[]): Addr[] {
  return lines.flatMap((l) => {
    const m = /^\d+:\s+(\S+)\s+inet\s+(\d+\.\d+\.\d+\.\d+)\/(\d+)/.exec(l);
    return m === null ? [] : [{ iface: m[1] ?? "", address: m[2] ?? "", prefix: Number(m[3]) }];
  });
}

/** `3: enp1s0f1np1: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 9000 ... state UP mode DEFAULT ...` */
export function parseIpLink(lines: readonly string[]): Link[] {
  return lines.flatMap((l) => {
    const m = /^\d+:\s+([^:@\s]+)(?:@\S+)?:\s+<([^>]*)>/.exec(l);
    return m === null ? [] : [{ iface: m[1] ?? "", up: (m[2] ?? "").split(",").includes("LOWER_UP") }];
  });
}

/** `link rocep1s0f1/1 state ACTIVE physical_state LINK_UP netdev enp1s0f1np1` */
export function parseRdmaLink(lines: readonly string[]): RdmaLink[] {
  return lines.flatMap((l) => {
    const m = /^link\s+(\S+)\/(\d+)\s+state\s+(\S+)\s+physical_state\s+(\S+)(?:\s+netdev\s+(\S+))?/.exec(l);
    if (m === null) return [];
    return [
      {
        hca: m[1] ?? "",
        port: Number(m[2]),
        state: m[3] ?? "",
        physical: m[4] ?? "",
        ...(m[5] !== undefined && { netdev: m[5] }),
      },
    ];
  });
}

/** `rocep1s0f1 port 1 ==> enp1s0f1np1 (Up)` */
export function parseIbdev2netdev(lines: readonly string[]): FabricFacts["ibdev"] {
  return lines.flatMap((l) => {
    const m = /^(\S+)\s+port\s+(\d+)\s+==>\s+(\S+)\s+\((Up|Down)\)/.exec(l);
    return m === null ? [] : [{ hca: m[1] ?? "", port: Number(m[2]), netdev: m[3] ?? "", up: m[4] === "Up" }];
  });
}

/** show_gids (MLNX OFED): `DEV\tPORT\tINDEX\tGID\t\t\t\t\tIPv4  \t\tVER\tDEV`, then one tab-separated row a GID. */
export function parseShowGids(lines: readonly string[]): Gid[] {
  return lines.flatMap((l) => {
    const f = l
      .split("\t")
      .map((s) => s.trim())
      .filter((s) => s !== "");
    if (f.length < 5 || !/^\d+$/.test(f[1] ?? "") || !/^\d+$/.test(f[2] ?? "")) return [];
    const ipv4 = /^\d+\.\d+\.\d+\.\d+$/.test(f[4] ?? "") ? f[4] : undefined;
    const rest = ipv4 === undefined ? f.slice(4) : f.slice(5);
    return [
      {
        hca: f[0] ?? "",
        port: Number(f[1]),
        index: Number(f[2]),
        ...(ipv4 !== undefined && { ipv4 }),
        version: rest[0] ?? "",
        ...(rest[1] !== undefined && { netdev: rest[1] }),
      },
    ];
  });
}

export function parseFabricLook(out: string): FabricFacts {
  const s = sections(out);
  const get = (k: Marked) => s.get(k) ?? [];
  const dev = s.get("devices");
  const img = s.get("image");
  return {
    addrs: parseIpAddr(get("ip-addr")),
    links: parseIpLink(get("ip-link")),
    rdma: parseRdmaLink(get("rdma")),
    ibdev: parseIbdev2netdev(get("ibdev2netdev")),
    gids: parseShowGids(get("show_gids")),
    ...(dev !== undefined && dev[0] !== "@absent" && { devices: dev }),
    memlock: (get("memlock")[0] ?? "").trim(),
    ...(img !== undefined && { imageId: img[0] === "@absent" || img[0] === undefined ? null : img[0].trim() }),
  };
}
