/**
 * The link test with nccl-tests' all_reduce_perf (./linkmpi.render.ts renders its scripts): which
 * tool the deployment's image allows, and the run under mpirun. mpirun's agent on rank 0 reaches
 * each peer with a key of this run alone (./fanout: authorized on the peer for one hour, forced to
 * `docker exec` into that node's link-test container, removed when the test ends), and trusts
 * exactly the host key sm121 verified for the peer.
 */
import type { Host } from "../remote";
import { MPI_MOUNT, TOOL_SLOT } from "./linkmpi.render";
import type { LinkTestMpi, NodeBundle } from "../render/types";
import { msg, say as said, type Msg } from "../text/messages";
import { nodePath, quote } from "../text/shell";
import { withPeerAccess, type Access, type Peer } from "../serve/fanout";
import { recordsOf } from "../protocol";

/** An exit code as the report says it: the number, or that the run timed out. */
export function exitText(code: number | null): string {
  return code === null ? said(msg("link.timedOut")) : String(code);
}

/** The program of the link test, and why that one (said where the report is printed). */
export type LinkTool = { kind: "all_reduce_perf"; path: string; why: Msg } | { kind: "torch"; why: Msg };

export interface MpiRun {
  node: string;
  rank: number;
  code: number | null;
  output: string;
}

/** Looks in the image on rank 0's node: nccl-tests where it has all_reduce_perf, mpirun and ssh. */
export async function chooseTool(deploy: string, mpi: LinkTestMpi | undefined, rank0: Host): Promise<LinkTool> {
  if (mpi === undefined) return { kind: "torch", why: msg("link.whyNoImage", { deploy }) };
  const step = "link test: look in the image";
  const res = await rank0.run(mpi.probe, { step, allowFailure: true, timeoutMs: 120_000 });
  const found = new Map<string, string>();
  for (const r of recordsOf(res.records, "linkTool")) found.set(r.tool, r.path);
  if (res.code !== 0 || found.size === 0) {
    const last = `${res.stdout}${res.stderr}`.trim().split("\n").slice(-1)[0] ?? "";
    return { kind: "torch", why: msg("link.whyNoShell", { node: rank0.node, last }) };
  }
  const path = found.get("all_reduce_perf") ?? "";
  if (path === "") return { kind: "torch", why: msg("link.whyNoTests") };
  if ((found.get("mpirun") ?? "") === "") return { kind: "torch", why: msg("link.whyNoMpirun", { path }) };
  if ((found.get("ssh") ?? "") === "") return { kind: "torch", why: msg("link.whyNoSsh", { path }) };
  return { kind: "all_reduce_perf", path, why: msg("link.whyMpi", { path }) };
}

/** mpirun's rsh agent: `<agent> <host> <command>` becomes ssh to that node's fabric address, as the key allows. */
function agentText(deployment: string, peers: readonly Peer[]): string {
  const cases = peers.map(
    (p) =>
      `  ${p.ip}) set -- -p ${p.port} -o HostKeyAlias=sm121-peer-${p.host.node} ${quote(`${p.user}@${p.ip}`)} "$@" ;;`,
  );
  return [
    "#!/bin/sh",
    "# mpirun's rsh agent for sm121's link test: ssh to a peer node, into its link-test container.",
    "h=$1; shift",
    'case "$h" in',
    ...cases,
    `  *) echo "sm121 link test: mpirun asked for $h, which is no node of ${deployment}" >&2; exit 1 ;;`,
    "esac",
    `exec ssh -F /dev/null -i ${MPI_MOUNT}/id -o IdentitiesOnly=yes -o IdentityAgent=none -o BatchMode=yes \\`,
    `  -o StrictHostKeyChecking=yes -o UserKnownHostsFile=${MPI_MOUNT}/known_hosts \\`,
    "  -o GlobalKnownHostsFile=/dev/null \\",
    '  -o ConnectTimeout=15 "$@"',
    "",
  ].join("\n");
}

/** Writes the agent, the run's private key and the peers' host keys into rank 0's link-test directory. */
function agentFilesScript(dir: string, deployment: string, a: Access, peers: readonly Peer[]): string {
  const d = nodePath(dir);
  const known = peers.map((p) => quote(`sm121-peer-${p.host.node} ${p.host.hostKey ?? ""}`)).join(" ");
  return [
    "umask 077",
    `mkdir -p ${d}`,
    `cat > ${d}/id <<'SM121_KEY'`,
    a.privateKey.trim(),
    "SM121_KEY",
    `printf '%s\\n' ${known} > ${d}/known_hosts`,
    `printf '%s' ${quote(Buffer.from(agentText(deployment, peers)).toString("base64"))} | base64 -d > ${d}/rsh`,
    `chmod 0700 ${d}/rsh`,
  ].join("\n");
}

/**
 * Runs all_reduce_perf under mpirun across the deployment's nodes: the containers, the agent,
 * mpirun on rank 0; removes the containers and the key files afterwards, also on failure. Returns
 * what mpirun printed (every rank's output comes through it), or the container that did not start.
 */
export async function runMpi(
  g: { deployment: string; nodes: readonly NodeBundle[] },
  mpi: LinkTestMpi,
  path: string,
  timeoutS: number,
  hostOf: (nb: NodeBundle) => Host,
  say: (line: string) => void,
): Promise<MpiRun[]> {
  const [first, ...rest] = g.nodes;
  if (first === undefined) return [];
  const peers: Peer[] = rest.map((nb) => ({
    host: hostOf(nb),
    ip: nb.ip,
    port: nb.conn.port,
    user: nb.conn.user,
    stateDir: nb.stateDir,
  }));
  try {
    return await withPeerAccess(peers, mpi.receiver, async (a) => {
      const agent = agentFilesScript(mpi.agentDir, g.deployment, a, peers);
      await hostOf(first).run(agent, { step: "link test: mpirun's agent" });
      const started = await Promise.all(
        g.nodes.map(async (nb, i) => {
          const step = "link test: start the rank's container";
          const res = await hostOf(nb).run(mpi.start[i] ?? "exit 1", { step, allowFailure: true });
          return { node: nb.node, rank: nb.rank, code: res.code, output: `${res.stdout}${res.stderr}` };
        }),
      );
      const failed = started.filter((s) => s.code !== 0);
      if (failed.length > 0) return failed;
      say(said(msg("link.mpirun", { node: first.node, path, nodes: g.nodes.map((n) => n.node).join(", ") })));
      const res = await hostOf(first).run(mpi.run.replace(TOOL_SLOT, quote(path)), {
        step: "link test",
        allowFailure: true,
        timeoutMs: (timeoutS + 60) * 1000,
      });
      const ended =
        res.code === 0
          ? msg("link.mpirunDone", { node: first.node })
          : msg("link.mpirunExited", { node: first.node, code: exitText(res.code) });
      say(said(ended));
      return [{ node: first.node, rank: first.rank, code: res.code, output: `${res.stdout}${res.stderr}` }];
    });
  } finally {
    const d = nodePath(mpi.agentDir);
    await Promise.allSettled(
      g.nodes.map((nb, i) =>
        hostOf(nb).run(`${mpi.stop[i] ?? ""}${i === 0 ? `\nrm -f ${d}/id ${d}/known_hosts ${d}/rsh` : ""}`, {
          step: "link test: remove the rank's container",
          allowFailure: true,
        }),
      ),
    );
  }
}
