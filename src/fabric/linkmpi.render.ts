/**
 * The link test with nccl-tests' `all_reduce_perf`, for a docker deployment whose image has it,
 * run the way NVIDIA's two-Spark NCCL playbook and sparkrun's `setup rdma-test` run it: `mpirun
 * -np N -H ip0:1,ip1:1` on rank 0, which starts the other ranks through its rsh agent. As in
 * sparkrun, every node first runs a container of the image that only sleeps (the engine's
 * container flags and the node's engine environment, so each rank has its own node's fabric
 * variables), and mpirun runs in rank 0's; its agent reaches a peer's container over ssh to the
 * peer's fabric address and `docker exec` there (./linkmpi.serve.ts grants it, for this test only).
 * Pure: these scripts go into the bundle; the agent, its key and the tool's path are the run's.
 */
import type { Site } from "../recipe/types";
import { containerFlags } from "../targets/docker";
import { joinNode, nodePath, quote } from "../text/shell";
import { containerAccess } from "./env.render";
import type { LinkTestMpi, NodeBundle } from "../render/types";
import { printRecord } from "../protocol";

/** Where a rank's container sees its link-test directory (the agent, its key, known_hosts). */
export const MPI_MOUNT = "/run/sm121-linktest";
/** The placeholder of the run script for the tool's path in the image (the probe finds it). */
export const TOOL_SLOT = "@SM121_ALL_REDUCE_PERF@";
/** Where nccl-tests' Makefile leaves its binaries in the images that carry them, besides PATH. */
const BUILD_DIRS = ["/opt/nccl-tests/build", "/usr/local/nccl-tests/build", "/workspace/nccl-tests/build"];

interface Group {
  deployment: string;
  nodes: readonly NodeBundle[];
}

/** The label that finds a deployment's link-test container on a node (the peers' forced command). */
const label = (deployment: string) => `sm121.linktest=${deployment}`;

/**
 * What the image has, read by running it once on rank 0's node (a `linkTool` record a tool,
 * path "" when absent): all_reduce_perf, the mpirun that starts its ranks, and the ssh that
 * mpirun's agent dials the peers with.
 */
function probeScript(image: string): string {
  const dirs = BUILD_DIRS.join(" ");
  const inImage = [
    "for t in all_reduce_perf mpirun ssh; do",
    '  p=$(command -v "$t" 2>/dev/null || true)',
    `  if [ -z "$p" ] && [ "$t" = all_reduce_perf ]; then`,
    `    for d in ${dirs}; do [ -x "$d/$t" ] && p="$d/$t" && break; done`,
    "  fi",
    `  ${printRecord("linkTool", '"tool":"%s","path":"%s"', '"$t" "$p"')}`,
    "done",
  ].join("\n");
  return `docker run --rm --entrypoint /bin/sh ${quote(image)} -c ${quote(inImage)}`;
}

function dirOf(nb: NodeBundle): string {
  return joinNode(nb.stateDir, "linktest");
}

/** Rank `nb`'s container: the engine's flags and environment, sleeping until mpirun's agent comes. */
function startScript(site: Site, g: Group, nb: NodeBundle, name: string, image: string): string {
  const node = site.nodes[nb.node];
  const access = node === undefined ? undefined : containerAccess(node, g.nodes.length, site.fabric);
  const env = { ...nb.env, NCCL_DEBUG: "INFO" };
  const argv = [
    `docker run -d --name ${quote(name)} --label ${quote(label(g.deployment))}`,
    ...containerFlags(access),
    ...Object.entries(env).map(([k, v]) => `-e ${quote(`${k}=${v}`)}`),
    `-v ${nodePath(dirOf(nb))}:${MPI_MOUNT}:ro`,
    `--entrypoint sleep ${quote(image)} infinity`,
  ].join(" \\\n  ");
  return [
    `mkdir -p ${nodePath(dirOf(nb))}`,
    `docker rm -f ${quote(name)} >/dev/null 2>&1 || true`,
    `${argv} >/dev/null`,
  ].join("\n");
}

/** mpirun in rank 0's container, one rank a node at each node's fabric address, bounded by the test's timeout. */
function runScript(site: Site, g: Group, name: string): string {
  const hosts = g.nodes.map((nb) => `${nb.ip}:1`).join(",");
  const t = site.fabric.linkTestTimeoutS;
  const mpirun = [
    "mpirun --allow-run-as-root",
    `-np ${g.nodes.length} -H ${hosts} --bind-to none`,
    `--mca plm_rsh_agent ${MPI_MOUNT}/rsh`,
    `${TOOL_SLOT} -b 8 -e 1G -f 2 -g 1`,
  ].join(" ");
  // The agent and its key are in rank 0's link-test directory (./linkmpi.serve.ts wrote them).
  return `timeout --kill-after=10 ${t} docker exec ${quote(name)} ${mpirun} 2>&1`;
}

/**
 * The forced command of the test's key on a peer: mpirun's agent asks for a command (orted) in
 * the deployment's link-test container of that node, and gets exactly that.
 */
function receiverScript(deployment: string): string {
  return [
    `c=$(docker ps -q --filter ${quote(`label=${label(deployment)}`)} --filter status=running | head -n 1)`,
    'if [ -z "$c" ]; then',
    `  echo ${quote(`sm121 link test: no link-test container of ${deployment} runs on this node`)} >&2; exit 1`,
    "fi",
    'exec docker exec -i "$c" sh -c "$SSH_ORIGINAL_COMMAND"',
    "",
  ].join("\n");
}

/** The nccl-tests run of a docker deployment across nodes (./linkmpi.serve runs it when the probe finds the tools). */
export function linkTestMpi(site: Site, g: Group, image: string, containerOf: (nb: NodeBundle) => string): LinkTestMpi {
  const first = g.nodes[0];
  return {
    probe: probeScript(image),
    start: g.nodes.map((nb) => startScript(site, g, nb, containerOf(nb), image)),
    run: first === undefined ? "exit 1" : runScript(site, g, containerOf(first)),
    stop: g.nodes.map((nb) => `docker rm -f ${quote(containerOf(nb))} >/dev/null 2>&1 || true`),
    receiver: receiverScript(g.deployment),
    agentDir: first === undefined ? "" : dirOf(first),
  };
}
