/**
 * What `sm121 doctor` asks besides each node's needs, so that it never says "ready" where the plan
 * refuses: the login the program uses (remote/login: the same keys in the same order, and what
 * logged in to each node), the fabric look of the plan (fabric/resolve.serve: a declared interface or
 * RDMA port the node does not have, a link down, subnets apart) and the memory the deployments on
 * a node claim together (render/nodefit), each refused as the plan refuses it.
 */
import type { Project } from "../project";
import { Dialer, type Host, type SshAuth } from "../remote";
import { hostPattern, type HostKeyRefusal } from "../remote/knownhosts";
import { loginWays, type Login } from "../remote/login";
import { deploymentFits, type NodeModelFacts } from "../render/memfit";
import { nodeBudgets, nodeRefusals } from "../render/nodefit";
import type { NodeConn } from "../render/types";
import { lookFabric } from "../fabric/resolve.serve";
import { say, t } from "../text/messages";
import type { DoctorCheck } from "./doctorschema";

/** The login check of a reached node: where and with what sm121 logged in. */
export function loginCheck(host: Host, conn: NodeConn, deployments: string[]): DoctorCheck {
  const target = conn.kind === "local" ? "local" : `${conn.user}@${conn.host}:${conn.port}`;
  return {
    check: "login",
    subject: target,
    ok: true,
    severity: "problem",
    detail: host.login === undefined ? null : t("doctor.loginWith", { with: host.login }),
    hint: null,
    deployments,
  };
}

/** The ways the login offers, and the key files it leaves out, as doctor's head lines say them. */
export function loginLines(l: Login): string[] {
  const ways = loginWays(l);
  return [
    ways.length === 0 ? t("doctor.loginNone") : t("doctor.loginWays", { ways: ways.join(", ") }),
    ...l.skipped.map((s) => `  ${t("doctor.loginSkipped", { why: say(s) })}`),
  ];
}

/** What the plan would refuse that no check of a single node finds: the fabric and the nodes' shared memory. */
export async function planRefusals(
  project: Project,
  facts: Readonly<Record<string, NodeModelFacts>>,
  auth: SshAuth,
): Promise<string[]> {
  const ds = project.bundles.map((b) => ({
    name: b.deployment,
    deploy: b.deploy,
    nodes: b.nodes.map((n) => n.node),
    ...(b.nodes[0]?.image !== undefined && { image: b.nodes[0].image }),
  }));
  const dial = new Dialer(auth);
  let fabric: string[];
  try {
    fabric = (await lookFabric(project.site, ds, dial)).refusals;
  } finally {
    dial.close();
  }
  const fits = deploymentFits(project.bundles, project.recipes, facts);
  return [...fabric, ...nodeRefusals(nodeBudgets(fits)).map((r) => r.text)];
}

/** The command that accepts (after a check of the fingerprint) or clears a refused host key. */
export function hostKeyFix(refusal: HostKeyRefusal | undefined, conn: NodeConn, knownHosts: string): string | null {
  const name = hostPattern(conn.host, conn.port);
  if (refusal?.status === "changed") return `ssh-keygen -R '${name}' -f ${knownHosts}`;
  if (refusal?.status === "new") return `ssh-keyscan -p ${conn.port} ${conn.host} >> ${knownHosts}`;
  return null;
}
