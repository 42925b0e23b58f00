/** `pulumi destroy` and `pulumi refresh` of a deployment, from the stored bundle alone. */
import { hostFor, withHosts, type SshAuth } from "../remote";
import type { DeploymentBundle } from "../render/types";
import { nodePath } from "../text/shell";
import type { DeploymentOutcome, NodeOutcome } from "./outcome";
import { driftOf, probeNode } from "./probe";

/** Stops every node (verifying gone) and removes sm121's record; the node's files stay. */
export async function stopDeployment(b: DeploymentBundle, auth: SshAuth, log: (m: string) => void): Promise<void> {
  await withHosts(b.nodes.map((n) => ({ node: n.node, conn: n.conn })), auth, async (hosts) => {
    log(`${b.deployment}: stopping on ${b.nodes.map((n) => n.node).join(", ")}`);
    await Promise.all(
      b.nodes.map((nb) => {
        return hostFor(hosts, nb.node).run(`${nb.stop}\nrm -f ${nodePath(nb.stateDir)}/state.json`, { step: "stop" });
      }),
    );
  }, { lock: true });
}

/** What runs on the nodes now, against the bundle: running, identity, drift. */
export async function inspectDeployment(b: DeploymentBundle, auth: SshAuth): Promise<DeploymentOutcome> {
  return withHosts(b.nodes.map((n) => ({ node: n.node, conn: n.conn })), auth, async (hosts) => {
    const nodes: NodeOutcome[] = await Promise.all(
      b.nodes.map(async (nb) => {
        const st = await probeNode(hostFor(hosts, nb.node), nb);
        const drift = driftOf(nb, st);
        const status = drift === undefined ? (nb.api !== undefined ? "serving" : "standby") : st.recorded === undefined && !st.running ? "stopped" : "drifted";
        return {
          node: nb.node,
          rank: nb.rank,
          status,
          identity: drift === undefined ? nb.identity : `drifted: ${drift}`,
          backups: [],
          restarted: false,
          ...(st.startedAt !== undefined && { startedAt: st.startedAt }),
          ...(nb.api !== undefined && drift === undefined && { endpoint: nb.api.url }),
        } satisfies NodeOutcome;
      }),
    );
    const bad = nodes.find((n) => n.status === "drifted" || n.status === "stopped");
    return { status: bad === undefined ? "serving" : bad.status === "stopped" && nodes.every((n) => n.status === "stopped") ? "stopped" : "drifted", nodes, warnings: nodes.filter((n) => n.identity.startsWith("drifted")).map((n) => `${n.node}: ${n.identity}`) };
  });
}
