/**
 * The fabric of the site: per node, the control interface (its address, the node's `ip`, is the
 * rendezvous address) and the RDMA devices its engines use over the ConnectX-7 links (RoCE), or
 * `auto` for the plan-time look to discover them; and for the site, how a container that spans
 * nodes gets at the devices and what bandwidth the link test accepts.
 *
 *   sm121:nodes:
 *     spark1:
 *       ip: 192.168.100.11
 *       fabric:
 *         interface: enp1s0f1np1
 *         rdma: [{ hca: rocep1s0f1, port: 1, gidIndex: 3 }, { hca: roceP2p1s0f1, gidIndex: 3 }]
 *     spark2: { ip: 192.168.100.12, fabric: auto }
 *   sm121:fabric: { privileged: false, nofile: 1048576, minBusBandwidthGBps: 10, linkTestTimeoutS: 120 }
 *   sm121:fabricCheck: true
 */
import { z } from "zod";
import { msg, type Msg } from "../text/messages";
import { zodMsg } from "../recipe/issues";

/** One RDMA device (HCA) port, as NCCL_IB_HCA names it (`rocep1s0f1:1`). */
export interface RdmaPort {
  hca: string;
  port: number;
  /** The RoCE v2 GID index of the port (NCCL_IB_GID_INDEX); unset: NCCL finds it. */
  gidIndex?: number;
}

/** A node's fabric as the site declares it. `auto` parts are found by the plan-time look. */
export interface NodeFabric {
  /** The interface's name, or `auto`. */
  interface: string;
  /** The RDMA ports, `auto`, or none (the engines talk over sockets on the interface). */
  rdma: RdmaPort[] | "auto";
  /** Where the node's RDMA character devices are (uverbs*, rdma_cm); a container sees them at /dev/infiniband. */
  devices: string;
  /** What the plan-time look found, in words, when it resolved `auto` (the plan shows it). */
  found?: string;
}

/** The site's fabric settings. */
export interface SiteFabric {
  /** Containers that span nodes run `--privileged` instead of the devices, IPC_LOCK and limits. */
  privileged: boolean;
  /** The open-files limit of such a container (`--ulimit nofile=N:N`). */
  nofile: number;
  /** The link test fails below this bus bandwidth (GB/s, nccl-tests' busbw at the largest size). */
  minBusBandwidthGBps?: number;
  /** How long a rank of the link test waits for its peers and for each collective (s). */
  linkTestTimeoutS: number;
  /** `pulumi up` runs the link test before the first start of a multi-node deployment. */
  check: boolean;
}

export const DEFAULT_DEVICES = "/dev/infiniband";
/** eugr/spark-vllm-docker's default (VLLM_SPARK_NOFILE_LIMIT). */
export const DEFAULT_NOFILE = 1048576;
/** torch.distributed's rendezvous wait is the link test's default too. */
export const DEFAULT_LINK_TEST_TIMEOUT_S = 120;

/**
 * The variables that name a node's interfaces and RDMA ports, which the site's fabric sets on each
 * node (./env.render fabricEnv): a recipe, which runs on any node, never names them.
 */
export const INTERFACE_ENV = [
  "NCCL_SOCKET_IFNAME",
  "GLOO_SOCKET_IFNAME",
  "TP_SOCKET_IFNAME",
  "UCX_NET_DEVICES",
  "OMPI_MCA_btl_tcp_if_include",
] as const;
export const RDMA_ENV = ["NCCL_IB_HCA", "NCCL_IB_GID_INDEX"] as const;

/** An interface's or an RDMA device's name. */
export const FABRIC_NAME = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$/;
const DEVICES = /^\/[A-Za-z0-9_./+@-]*$/;

function int() {
  return z.preprocess((v) => (typeof v === "string" && /^-?\d+$/.test(v.trim()) ? Number(v) : v), z.int());
}

/** The zod schema of a node's `fabric` block (site.ts puts it in the node's schema). */
export function nodeFabricSchema() {
  const name = (what: Msg | string, example: Msg) =>
    z.string().regex(FABRIC_NAME, { error: zodMsg(msg("spec.fabric.name", { what }), example) });
  const port = z.strictObject({
    hca: name(msg("spec.what.hca"), msg("spec.fabric.hcaFix")),
    port: int().pipe(z.int().min(1).max(255)).default(1),
    gidIndex: int().pipe(z.int().min(0).max(255)).optional(),
  });
  const block = z.strictObject({
    interface: z.union([z.literal("auto"), name("interface", msg("spec.fabric.interfaceFix"))]),
    rdma: z
      .union([
        z.literal("auto"),
        z.literal("none"),
        z.array(port).min(1, { error: zodMsg(msg("spec.fabric.noHca"), msg("spec.fabric.noHcaFix")) }),
      ])
      .default("none"),
    devices: z
      .string()
      .regex(DEVICES, {
        error: zodMsg(msg("spec.fabric.devices"), msg("spec.writeEg", { example: "/dev/infiniband" })),
      })
      .refine((s) => !s.split("/").includes(".."), { error: zodMsg(msg("spec.dotDotIn"), msg("spec.dotDotFix")) })
      .default(DEFAULT_DEVICES),
  });
  return z.union([z.literal("auto"), block]).transform((f): NodeFabric => {
    if (f === "auto") return { interface: "auto", rdma: "auto", devices: DEFAULT_DEVICES };
    const port = (p: RdmaPort): RdmaPort => ({
      hca: p.hca,
      port: p.port,
      ...(p.gidIndex !== undefined && { gidIndex: p.gidIndex }),
    });
    const rdma = f.rdma === "none" ? [] : f.rdma === "auto" ? "auto" : f.rdma.map(port);
    return { interface: f.interface, rdma, devices: f.devices };
  });
}

/** The zod schema of `sm121:fabric`. */
export function siteFabricSchema() {
  const num = z.preprocess(
    (v) => (typeof v === "string" && /^\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v),
    z.number().positive(),
  );
  const flag = z.preprocess((v) => (v === "true" ? true : v === "false" ? false : v), z.boolean());
  return z
    .strictObject({
      privileged: flag.default(false),
      nofile: int().pipe(z.int().min(1024)).default(DEFAULT_NOFILE),
      minBusBandwidthGBps: num.optional(),
      linkTestTimeoutS: int().pipe(z.int().min(5).max(3600)).default(DEFAULT_LINK_TEST_TIMEOUT_S),
    })
    .default({ privileged: false, nofile: DEFAULT_NOFILE, linkTestTimeoutS: DEFAULT_LINK_TEST_TIMEOUT_S });
}
