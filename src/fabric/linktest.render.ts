/**
 * The link test's scripts (./linkrun.serve runs them): one rank per node of a deployment, an NCCL
 * all-reduce in the deployment's own environment. A docker deployment's rank runs in a container
 * of its image with the flags the engine's container gets (targets/docker.ts `containerFlags`, the
 * RDMA access of ./env.render) and the node's engine environment (the per-node fabric variables); a
 * tmux or native deployment's rank runs on the node with that environment. The program is
 * nccl-tests' all_reduce_perf under mpirun where a docker deployment's image has them
 * (./linkmpi.render), else sm121's torch script (./allreduce.render), which prints nccl-tests'
 * table. Pure: `sm121 doctor --fabric` renders them, and with sm121:fabricCheck the bundle carries
 * them for `pulumi up`.
 */
import type { Site } from "../recipe/types";
import { containerFlags } from "../targets/docker";
import { joinNode, nodePath, quote } from "../text/shell";
import { ALLREDUCE_PY } from "./allreduce.render";
import { containerAccess, usesRdma } from "./env.render";
import { linkTestMpi } from "./linkmpi.render";
import type { LinkTestPlan, NodeBundle } from "../render/types";

export interface LinkTestOptions {
  /** The rendezvous port on rank 0's address (torch's MASTER_PORT). */
  port: number;
  minBytes: number;
  maxBytes: number;
}

export const LINK_TEST_DEFAULTS: LinkTestOptions = { port: 29517, minBytes: 8, maxBytes: 1 << 30 };

/** Where the script is, in the container. */
const MOUNTED = "/run/sm121-linktest";

/** The container of the link test's rank (never the engine's own name: the engine may still run). */
export function linkTestContainer(deployment: string, nb: Pick<NodeBundle, "rank">): string {
  return `sm121-${deployment}-linktest-${nb.rank}`;
}

/** What the scripts need of the deployment. */
interface Group {
  deployment: string;
  deploy: string;
  nodes: readonly NodeBundle[];
}

/** The script that runs one rank on its node; its output is the rank's stdout and stderr together. */
function linkTestScript(site: Site, b: Group, nb: NodeBundle, o: LinkTestOptions): string {
  const master = b.nodes[0]?.ip ?? nb.ip;
  const run: Record<string, string> = {
    NCCL_DEBUG: "INFO",
    MASTER_ADDR: master,
    MASTER_PORT: String(o.port),
    RANK: String(nb.rank),
    WORLD_SIZE: String(b.nodes.length),
    LOCAL_RANK: "0",
    SM121_LINKTEST_MIN_BYTES: String(o.minBytes),
    SM121_LINKTEST_MAX_BYTES: String(o.maxBytes),
    SM121_LINKTEST_TIMEOUT_S: String(site.fabric.linkTestTimeoutS),
  };
  const env = { ...nb.env, ...run };
  const dir = joinNode(nb.stateDir, "linktest");
  const write = [`mkdir -p ${nodePath(dir)}`, `printf '%s' ${quote(ALLREDUCE_PY)} > ${nodePath(dir)}/allreduce.py`];
  if (b.deploy !== "docker" || nb.image === undefined) {
    const exports = Object.entries(env).map(([k, v]) => `export ${k}=${quote(v)}`);
    return [...write, `( ${exports.join("; ")}; exec python3 ${nodePath(dir)}/allreduce.py ) 2>&1`].join("\n");
  }
  const node = site.nodes[nb.node];
  const access = node === undefined ? undefined : containerAccess(node, b.nodes.length, site.fabric);
  const name = linkTestContainer(b.deployment, nb);
  const argv = [
    `docker run --rm --name ${quote(name)}`,
    ...containerFlags(access),
    ...Object.entries(env).map(([k, v]) => `-e ${quote(`${k}=${v}`)}`),
    `-v ${nodePath(dir)}:${MOUNTED}:ro`,
    `--entrypoint python3 ${quote(nb.image)} ${MOUNTED}/allreduce.py`,
  ].join(" \\\n  ");
  return [...write, `docker rm -f ${quote(name)} >/dev/null 2>&1 || true`, `${argv} 2>&1`].join("\n");
}

/** The link test of a deployment that spans nodes: its scripts, and what it is judged against. */
export function linkTestPlan(site: Site, b: Group, o: LinkTestOptions = LINK_TEST_DEFAULTS): LinkTestPlan {
  const minimum = site.fabric.minBusBandwidthGBps;
  const image = b.nodes[0]?.image;
  return {
    rdma: b.nodes.every((nb) => usesRdma(site.nodes[nb.node]?.fabric)),
    ...(minimum !== undefined && { minBusBandwidthGBps: minimum }),
    timeoutS: site.fabric.linkTestTimeoutS,
    scripts: b.nodes.map((nb) => linkTestScript(site, b, nb, o)),
    ...(b.deploy === "docker" &&
      image !== undefined && {
        mpi: linkTestMpi(site, b, image, (nb) => linkTestContainer(b.deployment, nb)),
      }),
  };
}
