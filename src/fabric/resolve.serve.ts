/**
 * Plan time, before anything stops: one read-only look (./look.render) at every node of a
 * deployment whose nodes declare a fabric, or of a multi-node docker deployment (the image ID).
 * It resolves `auto` (the interface that holds the node's address, the ports that are up, their
 * RoCE v2 GID index) and finds what would make the engines fail or fall back to sockets, each
 * refusal naming the node and the fix: a declared RDMA port or its device directory missing, a
 * link down, memlock limited for a launch outside a container, the nodes' fabric addresses on
 * different subnets, the image ID differing between nodes while ImageSync will not copy it.
 */
import type { Dialer, Host } from "../remote";
import type { NodeFabric, RdmaPort } from "./site.recipe";
import type { DeployTarget, Site, SiteNode } from "../recipe/types";
import { nodeConn } from "../render/node";
import { usesRdma } from "./env.render";
import { t } from "../text/messages";
import { fabricLookScript, parseFabricLook, type FabricFacts, type Section } from "./look.render";

export interface FabricDeployment {
  name: string;
  deploy: DeployTarget;
  nodes: string[];
  image?: string;
}

export interface FabricLook {
  /** Per node: what it said, or why it could not be reached. */
  facts: Record<string, FabricFacts | { error: string }>;
  /** The refusals, one line each (empty: nothing stands in the way). */
  refusals: string[];
  /** Nodes whose `auto` fabric the look resolved, as the site should now read. */
  resolved: Record<string, NodeFabric>;
}

/** The deployments the look concerns: a node with a fabric, or a docker image across nodes. */
export function fabricDeployments(site: Site, all: readonly FabricDeployment[]): FabricDeployment[] {
  return all.filter((d) => d.nodes.some((n) => site.nodes[n]?.fabric !== undefined) || imageChecked(site, d));
}

function imageChecked(site: Site, d: FabricDeployment): boolean {
  return d.deploy === "docker" && d.nodes.length > 1 && !site.imageSync && d.image !== undefined;
}

/**
 * The images each node's look reports the ID of: the image of every docker deployment it serves
 * across nodes that ImageSync does not copy (each node must run the same build).
 */
export function imageQuestions(site: Site, deployments: readonly FabricDeployment[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const d of deployments) {
    if (!imageChecked(site, d) || d.image === undefined) continue;
    for (const n of d.nodes) out[n] = [...new Set([...(out[n] ?? []), d.image])];
  }
  return out;
}

/** The refusals of images whose IDs differ between a deployment's nodes, from what each node's look found. */
export function imageRefusals(
  site: Site,
  deployments: readonly FabricDeployment[],
  ids: Readonly<Record<string, Readonly<Record<string, string | null>>>>,
): string[] {
  return deployments.flatMap((d) =>
    imageRefusal(site, d, (n) => (d.image === undefined ? undefined : ids[n]?.[d.image])),
  );
}

/**
 * `images: false`: the look leaves the image IDs to the node's own look (serve/observe, which asks
 * them in the node's one docker call), and imageRefusals judges them there.
 */
export async function lookFabric(
  site: Site,
  deployments: readonly FabricDeployment[],
  dial: Dialer,
  o: { images?: boolean } = {},
): Promise<FabricLook> {
  const ds = fabricDeployments(site, deployments);
  const image = new Map<string, string>();
  if (o.images !== false) for (const [n, refs] of Object.entries(imageQuestions(site, ds))) image.set(n, refs[0] ?? "");
  const names = [...new Set(ds.flatMap((d) => d.nodes))].filter((n) => site.nodes[n] !== undefined);
  const seen = await Promise.all(
    names.map(async (n): Promise<[string, FabricFacts | { error: string }]> => {
      const node = site.nodes[n] as SiteNode;
      let host: Host | undefined;
      const script = fabricLookScript(lookWants(node.fabric), node.fabric?.devices ?? "/dev/infiniband", image.get(n));
      if (script === "") return [n, parseFabricLook("")];
      try {
        host = await dial.host(n, nodeConn(node));
        const res = await host.run(script, { step: "look at the fabric" });
        return [n, parseFabricLook(res.stdout)];
      } catch (e) {
        return [n, { error: (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "" }];
      } finally {
        host?.close();
      }
    }),
  );
  return judgeFabric(site, ds, Object.fromEntries(seen));
}

/**
 * What the look asks a node's fabric: its addresses and links where it declares one; the RDMA
 * ports, the device directory and memlock where it uses RDMA, and the ports' netdevs and GIDs where
 * `auto` is to find them. (The image's ID is asked where lookFabric compares the image.)
 */
export function lookWants(fab: NodeFabric | undefined): Set<Section> {
  const s = new Set<Section>();
  if (fab === undefined) return s;
  for (const x of ["ip-addr", "ip-link"] as const) s.add(x);
  if (usesRdma(fab)) for (const x of ["rdma", "devices", "memlock"] as const) s.add(x);
  if (fab.rdma === "auto") for (const x of ["ibdev2netdev", "show_gids"] as const) s.add(x);
  return s;
}

/** The refusals and resolutions from what the nodes said (pure). */
export function judgeFabric(site: Site, ds: readonly FabricDeployment[], facts: FabricLook["facts"]): FabricLook {
  const refusals: string[] = [];
  const resolved: Record<string, NodeFabric> = {};
  const judged = new Set<string>();
  for (const d of ds) {
    for (const n of d.nodes) {
      const node = site.nodes[n];
      const f = facts[n];
      if (node?.fabric === undefined || f === undefined || "error" in f || judged.has(`${n} ${d.deploy}`)) continue;
      judged.add(`${n} ${d.deploy}`);
      const r = resolve(node, node.fabric, f);
      if (r.fabric !== node.fabric) resolved[n] = r.fabric;
      refusals.push(...r.refusals, ...nodeRefusals(node, r.fabric, f, d));
    }
    const idOf = (n: string) => {
      const f = facts[n];
      return f === undefined || "error" in f ? undefined : f.imageId;
    };
    refusals.push(...subnetRefusal(site, d, facts, resolved), ...imageRefusal(site, d, idOf));
  }
  // A node the fabric look could not reach refuses nothing here: the node look (./observe)
  // makes its deployments unknown, and the others go on.
  return { facts, refusals: [...new Set(refusals)], resolved };
}

/** A fabric with a part for the look to find. */
const hasAuto = (fab: NodeFabric | undefined) => fab !== undefined && (fab.interface === "auto" || fab.rdma === "auto");

/** Whether some node's fabric has an `auto` part for the look to find (and so renders again). */
export function resolvesAuto(site: Site): boolean {
  return Object.values(site.nodes).some((n) => hasAuto(n.fabric));
}

/** `auto` parts, from the node's own tools. */
function resolve(node: SiteNode, fab: NodeFabric, f: FabricFacts): { fabric: NodeFabric; refusals: string[] } {
  if (!hasAuto(fab)) return { fabric: fab, refusals: [] };
  const found: string[] = [];
  let nic = fab.interface;
  if (nic === "auto") {
    const a = f.addrs.find((x) => x.address === node.ip);
    if (a === undefined) return { fabric: fab, refusals: [t("fabric.autoNoIface", { node: node.name, ip: node.ip })] };
    nic = a.iface;
    found.push(`${nic} holds ${node.ip}`);
  }
  let rdma: RdmaPort[] = fab.rdma === "auto" ? [] : fab.rdma;
  if (fab.rdma === "auto") {
    const up =
      f.rdma.length > 0
        ? f.rdma.filter(active).map((l) => ({ hca: l.hca, port: l.port }))
        : f.ibdev.filter((l) => l.up).map((l) => ({ hca: l.hca, port: l.port }));
    // NCCL_IB_GID_INDEX: the RoCE v2 GID that carries the node's address (show_gids).
    const gid = f.gids.find((g) => g.version === "v2" && g.ipv4 === node.ip)?.index;
    rdma = up.map((p) => ({ ...p, ...(gid !== undefined && { gidIndex: gid }) }));
    found.push(
      rdma.length === 0
        ? "no RDMA port is up: sockets"
        : `ports up: ${rdma.map((p) => `${p.hca}:${p.port}`).join(", ")}` +
            (gid === undefined ? "" : `, RoCE v2 GID ${gid}`),
    );
  }
  return {
    fabric: { ...fab, interface: nic, rdma, found: `found by the plan-time look: ${found.join("; ")}` },
    refusals: [],
  };
}

const active = (l: { state: string; physical: string }) => l.state === "ACTIVE" && l.physical === "LINK_UP";

function nodeRefusals(node: SiteNode, fab: NodeFabric, f: FabricFacts, d: FabricDeployment): string[] {
  const out: string[] = [];
  const n = node.name;
  const at = `sm121:nodes.${n}.fabric`;
  const none = (xs: string[]) => xs.join(", ") || t("fabric.none");
  if (fab.interface !== "auto") {
    const iface = fab.interface;
    const link = f.links.find((l) => l.iface === iface);
    const links = () => none(f.links.map((l) => l.iface));
    if (link === undefined) out.push(t("fabric.noIface", { node: n, iface, links: links(), at }));
    else if (!link.up) out.push(t("fabric.linkDown", { node: n, iface }));
    else if (!f.addrs.some((a) => a.iface === iface && a.address === node.ip)) {
      out.push(t("fabric.noAddress", { node: n, iface, ip: node.ip }));
    }
  }
  if (!usesRdma(fab) || fab.rdma === "auto") return out;
  if (f.devices === undefined || f.devices.length === 0) {
    const args = { node: n, hcas: fab.rdma.map((p) => p.hca).join(", "), dir: fab.devices, at };
    out.push(t(f.devices === undefined ? "fabric.noDevicesDir" : "fabric.emptyDevicesDir", args));
  }
  for (const p of fab.rdma) {
    const l = f.rdma.find((x) => x.hca === p.hca && x.port === p.port);
    const ports = () => none(f.rdma.map((x) => `${x.hca}/${x.port}`));
    if (l === undefined) out.push(t("fabric.noPort", { node: n, hca: p.hca, port: p.port, ports: ports(), at }));
    else if (!active(l)) {
      const port = `${p.hca}/${p.port}${l.netdev === undefined ? "" : ` (${l.netdev})`}`;
      const dev = l.netdev ?? "<netdev>";
      out.push(t("fabric.portDown", { node: n, port, state: l.state, physical: l.physical, dev }));
    }
  }
  if (d.deploy !== "docker" && f.memlock !== "unlimited") {
    out.push(t("fabric.memlock", { node: n, memlock: f.memlock, deploy: d.deploy, deployment: d.name }));
  }
  return out;
}

function network(address: string, prefix: number): string {
  const n = address.split(".").reduce((a, o) => a * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const v = (n & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (v >>> s) & 255).join(".")}/${prefix}`;
}

function subnetRefusal(
  site: Site,
  d: FabricDeployment,
  facts: FabricLook["facts"],
  resolved: Record<string, NodeFabric>,
): string[] {
  if (d.nodes.length < 2) return [];
  const nets: string[] = [];
  const subnets = new Set<string>();
  for (const n of d.nodes) {
    const node = site.nodes[n];
    const fab = resolved[n] ?? node?.fabric;
    const f = facts[n];
    if (node === undefined || fab === undefined || f === undefined || "error" in f) return [];
    const a = f.addrs.find((x) => x.iface === fab.interface && x.address === node.ip);
    if (a === undefined) return [];
    const net = network(a.address, a.prefix);
    subnets.add(net);
    nets.push(`${n} ${a.address}/${a.prefix} (${net})`);
  }
  if (subnets.size <= 1) return [];
  return [t("fabric.subnets", { deployment: d.name, nets: nets.join(", ") })];
}

function imageRefusal(site: Site, d: FabricDeployment, idOf: (node: string) => string | null | undefined): string[] {
  if (!imageChecked(site, d)) return [];
  const ids = d.nodes.map((n) => ({ n, id: idOf(n) }));
  const present = ids.filter((x): x is { n: string; id: string } => typeof x.id === "string");
  if (new Set(present.map((x) => x.id)).size <= 1) return [];
  const each = present.map((x) => `${x.n} ${x.id.slice(0, 19)}`).join(", ");
  return [t("fabric.imageDiffers", { deployment: d.name, image: d.image ?? "", ids: each })];
}
