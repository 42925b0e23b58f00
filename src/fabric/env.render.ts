/**
 * What a node's fabric means for the engines on it: the environment every engine reads (NCCL,
 * Gloo, TensorPipe, UCX and OpenMPI name the interface; NCCL the RDMA ports and their GID index),
 * and, for a container of a deployment that spans nodes over RDMA, the access RDMA needs inside it
 * (the devices, IPC_LOCK, an unlimited memlock and a high open-files limit, or --privileged when
 * the site asks). Pure: `auto` parts are resolved by the plan-time look before render; `sm121
 * render`, which reads no node, shows them as `auto`.
 */
import { INTERFACE_ENV, type NodeFabric, type RdmaPort, type SiteFabric } from "./site.recipe";
import type { Recipe, SiteNode } from "../recipe/types";
import { accessFlags } from "./access.targets";
import type { ContainerAccess } from "../targets/types";

/** Where a container sees the RDMA devices, whatever the node's own path. */
export const CONTAINER_DEVICES = "/dev/infiniband";

/** The ports as NCCL_IB_HCA takes them: `rocep1s0f1:1,roceP2p1s0f1:1`. */
export function hcaList(ports: readonly RdmaPort[]): string {
  return ports.map((p) => `${p.hca}:${p.port}`).join(",");
}

/** Whether the node's engines use RDMA (declared ports, or `auto`: the look finds them). */
export function usesRdma(f: NodeFabric | undefined): boolean {
  return f !== undefined && (f.rdma === "auto" || f.rdma.length > 0);
}

/** NCCL_IB_GID_INDEX is one value for the process: the ports' common index, when they declare one. */
export function gidIndexOf(ports: readonly RdmaPort[]): number | undefined {
  const ids = [...new Set(ports.map((p) => p.gidIndex))];
  return ids.length === 1 ? ids[0] : undefined;
}

/** The environment of every engine on the node (the recipe's own [env] wins over it). */
export function fabricEnv(f: NodeFabric): Record<string, string> {
  const env: Record<string, string> = Object.fromEntries(INTERFACE_ENV.map((k) => [k, f.interface]));
  if (f.rdma === "auto") return { ...env, NCCL_IB_HCA: "auto", NCCL_IB_GID_INDEX: "auto", NCCL_IB_DISABLE: "0" };
  if (f.rdma.length === 0) return { ...env, NCCL_IB_DISABLE: "1" };
  const gid = gidIndexOf(f.rdma);
  return {
    ...env,
    NCCL_IB_HCA: hcaList(f.rdma),
    ...(gid !== undefined && { NCCL_IB_GID_INDEX: String(gid) }),
    NCCL_IB_DISABLE: "0",
  };
}

/**
 * The access a container of `node` needs: for a docker deployment across nodes where this node
 * declares RDMA. Undefined otherwise (a one-node deployment talks to no other node).
 */
export function containerAccess(node: SiteNode, nnodes: number, site: SiteFabric): ContainerAccess | undefined {
  if (nnodes < 2 || !usesRdma(node.fabric)) return undefined;
  const limits = ["memlock=-1:-1", `nofile=${site.nofile}:${site.nofile}`];
  if (site.privileged) return { privileged: true, devices: [], capAdd: [], ulimits: limits };
  const dev = node.fabric?.devices ?? CONTAINER_DEVICES;
  return {
    privileged: false,
    devices: [dev === CONTAINER_DEVICES ? dev : `${dev}:${CONTAINER_DEVICES}`],
    capAdd: ["IPC_LOCK"],
    ulimits: limits,
  };
}

/**
 * The plan's facts of the node's fabric: what it declares or the look found, and the container flags.
 * `own`: the fabric variables the recipe sets itself (default: its [env]; a script recipe's profile).
 */
export function fabricFacts(
  node: SiteNode,
  recipe: Recipe,
  access: ContainerAccess | undefined,
  set: { own: string[]; ownedBy: string } = { own: [], ownedBy: recipe.file },
): string[] {
  const f = node.fabric;
  if (f === undefined) return [];
  const found = f.found === undefined ? "" : ` (${f.found})`;
  const facts = [`fabric interface ${f.interface}, address ${node.ip} (the rendezvous address)${found}`];
  if (f.rdma === "auto")
    facts.push("fabric rdma auto (the plan-time look finds the ports; sm121 render reads no node)");
  else if (f.rdma.length === 0) facts.push("fabric rdma none (NCCL uses sockets on the interface)");
  else {
    const ports = f.rdma.map((p) => `${p.hca}:${p.port}${p.gidIndex === undefined ? "" : ` gid ${p.gidIndex}`}`);
    facts.push(`fabric rdma ${ports.join(", ")}, devices ${f.devices}`);
  }
  const own = [...set.own, ...Object.keys(fabricEnv(f)).filter((k) => Object.hasOwn(recipe.env, k))];
  if (own.length > 0) facts.push(`fabric variables the recipe sets itself (${set.ownedBy}): ${own.join(", ")}`);
  for (const flag of access === undefined ? [] : accessFlags(access)) facts.push(`container ${flag}`);
  if (usesRdma(f) && recipe.deploy !== "docker")
    facts.push("fabric memlock: the preflight refuses a node whose `ulimit -l` is not unlimited");
  if (recipe.deploy === "script")
    facts.push(
      "fabric variables reach start.sh's container as -e pairs of EXTRA_DOCKER_ARGS; " +
        "its RDMA devices and limits are start.sh's own docker run flags",
    );
  return facts;
}
