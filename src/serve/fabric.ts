/**
 * Plan time, before anything stops: one read-only look (./fabriclook) at every node of a
 * deployment whose nodes declare a fabric, or of a multi-node docker deployment (the image ID).
 * It resolves `auto` (the interface that holds the node's address, the ports that are up, their
 * RoCE v2 GID index) and finds what would make the engines fail or fall back to sockets, each
 * refusal naming the node and the fix: a declared RDMA port or its device directory missing, a
 * link down, memlock limited for a launch outside a container, the nodes' fabric addresses on
 * different subnets, the image ID differing between nodes while ImageSync will not copy it.
 */
import type { Dialer, Host } from "../remote";
import type { NodeFabric, RdmaPort } from "../recipe/fabric";
import type { DeployTarget, Site, SiteNode } from "../recipe/types";
import { nodeConn } from "../render/node";
import { usesRdma } from "../render/fabric";
import { fabricLookScript, parseFabricLook, type FabricFacts } from "./fabriclook";

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

export async function lookFabric(site: Site, deployments: readonly FabricDeployment[], dial: Dialer): Promise<FabricLook> {
  const ds = fabricDeployments(site, deployments);
  const image = new Map<string, string>();
  for (const d of ds) if (imageChecked(site, d) && d.image !== undefined) for (const n of d.nodes) image.set(n, d.image);
  const names = [...new Set(ds.flatMap((d) => d.nodes))].filter((n) => site.nodes[n] !== undefined);
  const seen = await Promise.all(names.map(async (n): Promise<[string, FabricFacts | { error: string }]> => {
    const node = site.nodes[n] as SiteNode;
    let host: Host | undefined;
    try {
      host = await dial.host(n, nodeConn(node));
      const res = await host.run(fabricLookScript(node.fabric?.devices ?? "/dev/infiniband", image.get(n)), { step: "look at the fabric" });
      return [n, parseFabricLook(res.stdout)];
    } catch (e) {
      return [n, { error: (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "" }];
    } finally {
      host?.close();
    }
  }));
  return judgeFabric(site, ds, Object.fromEntries(seen));
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
    refusals.push(...subnetRefusal(site, d, facts, resolved), ...imageRefusal(site, d, facts));
  }
  // A node the fabric look could not reach refuses nothing here: the node look (./observe)
  // makes its deployments unknown, and the others go on.
  return { facts, refusals: [...new Set(refusals)], resolved };
}

/** `auto` parts, from the node's own tools. */
function resolve(node: SiteNode, fab: NodeFabric, f: FabricFacts): { fabric: NodeFabric; refusals: string[] } {
  if (fab.interface !== "auto" && fab.rdma !== "auto") return { fabric: fab, refusals: [] };
  const found: string[] = [];
  let nic = fab.interface;
  if (nic === "auto") {
    const a = f.addrs.find((x) => x.address === node.ip);
    if (a === undefined) return { fabric: fab, refusals: [`${node.name}: fabric auto: no interface holds the node's address ${node.ip} (ip -o -4 addr show); name the interface in sm121:nodes.${node.name}.fabric.interface, or set ip to the fabric address`] };
    nic = a.iface;
    found.push(`${nic} holds ${node.ip}`);
  }
  let rdma: RdmaPort[] = fab.rdma === "auto" ? [] : fab.rdma;
  if (fab.rdma === "auto") {
    const up = f.rdma.length > 0 ? f.rdma.filter(active).map((l) => ({ hca: l.hca, port: l.port })) : f.ibdev.filter((l) => l.up).map((l) => ({ hca: l.hca, port: l.port }));
    // NCCL_IB_GID_INDEX: the RoCE v2 GID that carries the node's address (show_gids).
    const gid = f.gids.find((g) => g.version === "v2" && g.ipv4 === node.ip)?.index;
    rdma = up.map((p) => ({ ...p, ...(gid !== undefined && { gidIndex: gid }) }));
    found.push(rdma.length === 0 ? "no RDMA port is up: sockets" : `ports up: ${rdma.map((p) => `${p.hca}:${p.port}`).join(", ")}${gid === undefined ? "" : `, RoCE v2 GID ${gid}`}`);
  }
  return { fabric: { ...fab, interface: nic, rdma, found: `found by the plan-time look: ${found.join("; ")}` }, refusals: [] };
}

const active = (l: { state: string; physical: string }) => l.state === "ACTIVE" && l.physical === "LINK_UP";

function nodeRefusals(node: SiteNode, fab: NodeFabric, f: FabricFacts, d: FabricDeployment): string[] {
  const out: string[] = [];
  const n = node.name;
  const at = `sm121:nodes.${n}.fabric`;
  if (fab.interface !== "auto") {
    const link = f.links.find((l) => l.iface === fab.interface);
    if (link === undefined) out.push(`${n}: the fabric interface ${fab.interface} is not on the node (ip -o link show: ${f.links.map((l) => l.iface).join(", ") || "none"}); fix ${at}.interface`);
    else if (!link.up) out.push(`${n}: the link of ${fab.interface} is down; plug the cable in, or \`sudo ip link set ${fab.interface} up\` on ${n}`);
    else if (!f.addrs.some((a) => a.iface === fab.interface && a.address === node.ip)) out.push(`${n}: ${fab.interface} does not hold the node's address ${node.ip} (the rendezvous address); give it that address (netplan), or set sm121:nodes.${n}.ip to its address`);
  }
  if (!usesRdma(fab) || fab.rdma === "auto") return out;
  if (f.devices === undefined || f.devices.length === 0) out.push(`${n}: RDMA is declared (${fab.rdma.map((p) => p.hca).join(", ")}) but ${fab.devices} ${f.devices === undefined ? "does not exist" : "is empty"} on the node; load the RDMA modules (modprobe ib_uverbs rdma_ucm) or install the driver, or write rdma: none in ${at}`);
  for (const p of fab.rdma) {
    const l = f.rdma.find((x) => x.hca === p.hca && x.port === p.port);
    if (l === undefined) out.push(`${n}: the HCA ${p.hca} port ${p.port} is not on the node (rdma link show: ${f.rdma.map((x) => `${x.hca}/${x.port}`).join(", ") || "none"}); fix ${at}.rdma (ibdev2netdev lists the node's ports)`);
    else if (!active(l)) out.push(`${n}: the link of ${p.hca}/${p.port}${l.netdev === undefined ? "" : ` (${l.netdev})`} is down (state ${l.state}, physical_state ${l.physical}); check the cable and \`sudo ip link set ${l.netdev ?? "<netdev>"} up\` on ${n}`);
  }
  if (d.deploy !== "docker" && f.memlock !== "unlimited") {
    out.push(`${n}: \`ulimit -l\` is ${f.memlock} KiB for a ${d.deploy} launch of ${d.name}; RDMA pins the engine's buffers, so make it unlimited for the node's user (\`* - memlock unlimited\` in /etc/security/limits.conf, then log in again; LimitMEMLOCK=infinity for a service)`);
  }
  return out;
}

function network(address: string, prefix: number): string {
  const n = address.split(".").reduce((a, o) => a * 256 + Number(o), 0);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const v = (n & mask) >>> 0;
  return `${[24, 16, 8, 0].map((s) => (v >>> s) & 255).join(".")}/${prefix}`;
}

function subnetRefusal(site: Site, d: FabricDeployment, facts: FabricLook["facts"], resolved: Record<string, NodeFabric>): string[] {
  if (d.nodes.length < 2) return [];
  const nets: string[] = [];
  for (const n of d.nodes) {
    const node = site.nodes[n];
    const fab = resolved[n] ?? node?.fabric;
    const f = facts[n];
    if (node === undefined || fab === undefined || f === undefined || "error" in f) return [];
    const a = f.addrs.find((x) => x.iface === fab.interface && x.address === node.ip);
    if (a === undefined) return [];
    nets.push(`${n} ${a.address}/${a.prefix} (${network(a.address, a.prefix)})`);
  }
  const distinct = new Set(nets.map((s) => /\(([^)]+)\)$/.exec(s)?.[1]));
  if (distinct.size <= 1) return [];
  return [`${d.name}: the fabric addresses of its nodes are not on one subnet: ${nets.join(", ")}; give the nodes' fabric interfaces addresses on one subnet (or name the interfaces that share one)`];
}

function imageRefusal(site: Site, d: FabricDeployment, facts: FabricLook["facts"]): string[] {
  if (!imageChecked(site, d)) return [];
  const ids = d.nodes.map((n) => {
    const f = facts[n];
    return { n, id: f === undefined || "error" in f ? undefined : f.imageId };
  });
  const present = ids.filter((x): x is { n: string; id: string } => typeof x.id === "string");
  if (new Set(present.map((x) => x.id)).size <= 1) return [];
  return [`${d.name}: the image ${d.image ?? ""} differs between its nodes: ${present.map((x) => `${x.n} ${x.id.slice(0, 19)}`).join(", ")}; set sm121:imageSync: true (rank 0's build is copied to the others), or load the same build on every node`];
}
