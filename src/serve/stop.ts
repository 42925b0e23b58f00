/** `pulumi destroy` and `pulumi refresh` of a deployment, from the stored bundle alone. */
import { hostFor, withHosts, type SshAuth } from "../remote";
import type { DeploymentBundle } from "../render/types";
import type { DeploymentOutcome, NodeOutcome } from "./outcome";
import { driftFindings, probeNode } from "./probe";
import { ownStopScript } from "./registry";
import { forgetScript } from "./secretfiles";

/**
 * Stops every node (verifying gone) and runs the after_stop hooks, then removes the deployment's
 * directory (its secrets, its record) and the secret lines sm121 wrote into a script recipe's
 * .env and backups (`secrets`: what sm121 holds). A node that another deployment has taken since
 * (a node move) is not stopped again; its directory goes all the same.
 */
export async function stopDeployment(
  b: DeploymentBundle,
  auth: SshAuth,
  log: (m: string) => void,
  secrets: Readonly<Record<string, string>> = {},
): Promise<void> {
  await withHosts(b.nodes, auth, async (hosts) => {
    log(`${b.deployment}: stopping on ${b.nodes.map((n) => n.node).join(", ")}`);
    await Promise.all(b.nodes.map((nb) => {
      const script = ownStopScript(nb, b.hooks.afterStop, forgetScript(nb, secrets));
      return hostFor(hosts, nb.node).run(script, { step: "stop", onLine: (l) => log(`${nb.node}: ${l}`) });
    }));
  }, { lock: true, log });
}

/** What runs on the nodes now, against the bundle: running, identity, drift. */
export async function inspectDeployment(b: DeploymentBundle, auth: SshAuth): Promise<DeploymentOutcome> {
  return withHosts(b.nodes, auth, async (hosts) => {
    const nodes: NodeOutcome[] = await Promise.all(
      b.nodes.map(async (nb) => {
        const st = await probeNode(hostFor(hosts, nb.node), nb);
        const drift = driftFindings(nb, st).map((d) => d.words).join("; ");
        const status = drift === "" ? (nb.api !== undefined ? "serving" : "standby") : st.recorded === undefined && !st.running ? "stopped" : "drifted";
        return {
          node: nb.node,
          rank: nb.rank,
          status,
          identity: drift === "" ? nb.identity : `drifted: ${drift}`,
          backups: [],
          restarted: false,
          ...(st.startedAt !== undefined && { startedAt: st.startedAt }),
          ...(nb.api !== undefined && drift === "" && { endpoint: nb.api.url }),
        } satisfies NodeOutcome;
      }),
    );
    const bad = nodes.find((n) => n.status === "drifted" || n.status === "stopped");
    return { status: bad === undefined ? "serving" : bad.status === "stopped" && nodes.every((n) => n.status === "stopped") ? "stopped" : "drifted", nodes, warnings: nodes.filter((n) => n.identity.startsWith("drifted")).map((n) => `${n.node}: ${n.identity}`) };
  });
}
