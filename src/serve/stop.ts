/** `pulumi destroy` and `pulumi refresh` of a deployment, from the stored bundle alone. */
import { CommandError, hostFor, withHosts, type Host, type SshAuth } from "../remote";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { joinNode, nodePath, quote } from "../text/shell";
import type { DeploymentOutcome, NodeOutcome } from "./outcome";
import { probeNode } from "./probe";
import { driftFindings } from "./drift";
import { ownStopScript } from "./registry";
import { maskSecrets } from "./failure";
import { forgetScript } from "./secretfiles";
import { listMsg, msg, say, t } from "../text/messages";

/**
 * A stop that failed on some node: the deployment stays (Pulumi keeps a resource whose delete
 * failed, with its stored outputs: a delete cannot write state), and each failed node keeps its
 * directory plus a `stop-failed.json` that the next look, `sm121 status` and `pulumi refresh`
 * read as `failed`, with the node and the stop's last lines.
 */
export class StopFailure extends Error {
  readonly failed: Array<{ node: string; lines: string }>;

  constructor(message: string, failed: Array<{ node: string; lines: string }>) {
    super(message);
    this.name = "StopFailure";
    this.failed = failed;
  }
}

/** The last lines a failed stop printed (stderr first: where a script says why). */
function lastLines(e: unknown): string {
  if (e instanceof CommandError) {
    const tail = (e.stderrTail.trim() !== "" ? e.stderrTail : e.stdoutTail).trim().split("\n").slice(-3);
    const ending =
      e.code !== null
        ? `exit code ${e.code}`
        : e.timedOutS !== undefined
          ? `timed out after ${e.timedOutS} s`
          : `signal ${e.signal ?? "?"}`;
    return [`${ending}`, ...tail].join(" | ");
  }
  return (e instanceof Error ? e.message : String(e)).split("\n")[0] ?? "";
}

/** Writes the failed stop's record into the deployment's state dir on the node. */
function stopFailedScript(nb: NodeBundle, at: string, lines: string): string {
  const file = nodePath(joinNode(nb.stateDir, "stop-failed.json"));
  return `mkdir -p ${nodePath(nb.stateDir)}; printf '%s\\n' ${quote(JSON.stringify({ at, lines }))} > ${file}`;
}

/**
 * Stops every node (verifying gone) and runs the after_stop hooks, then removes the deployment's
 * directory (its secrets, its record) and the secret lines sm121 wrote into a script recipe's
 * .env and backups (`secrets`: what sm121 holds). A node that another deployment has taken since
 * (a node move) is not stopped again; its directory goes all the same. A stop that fails on any
 * node fails the whole (StopFailure), after the other nodes' stops have run: each of those is
 * stopped and its directory gone, each failed one keeps its directory and says why. No secret
 * shows in the lines quoted from a node.
 */
export async function stopDeployment(
  b: DeploymentBundle,
  auth: SshAuth,
  log: (m: string) => void,
  secrets: Readonly<Record<string, string>> = {},
): Promise<void> {
  const mask = (text: string) => maskSecrets(text, secrets);
  await withHosts(
    b.nodes,
    auth,
    async (hosts) => {
      log(t("serve.stopping", { nodes: b.nodes.map((n) => n.node).join(", ") }));
      const host = (nb: NodeBundle): Host => hostFor(hosts, nb.node);
      const stop = (nb: NodeBundle) => {
        const onLine = (l: string) => log(`${nb.node}: ${mask(l)}`);
        return host(nb).run(ownStopScript(nb, b.hooks.afterStop, forgetScript(nb, secrets)), { step: "stop", onLine });
      };
      const results = await Promise.allSettled(b.nodes.map(stop));
      const failed = b.nodes.flatMap((nb, i) => {
        const r = results[i];
        return r?.status === "rejected" ? [{ nb, error: r.reason as unknown, lines: mask(lastLines(r.reason)) }] : [];
      });
      if (failed.length === 0) return;
      const at = new Date().toISOString().replace(/\.\d+Z$/, "Z");
      // Best effort: a node whose connection is gone keeps its registry entry, which says as much.
      const record = (f: (typeof failed)[number]) => {
        return host(f.nb).run(stopFailedScript(f.nb, at, f.lines), { step: "record the failed stop" });
      };
      await Promise.allSettled(failed.map(record));
      const stopped = b.nodes.filter((nb) => !failed.some((f) => f.nb === nb)).map((nb) => nb.node);
      const where = failed.map((f) => f.nb.node).join(", ");
      const evidence = failed.map((f) => mask(f.error instanceof Error ? f.error.message : String(f.error)));
      const script = joinNode(failed[0]?.nb.stateDir ?? "", "stop.sh");
      throw new StopFailure(
        [
          stopped.length > 0
            ? t("serve.stopFailedSome", { deployment: b.deployment, where, stopped: stopped.join(", ") })
            : t("serve.stopFailed", { deployment: b.deployment, where }),
          ...evidence,
          t("serve.stopFix", { where, script }),
        ].join("\n"),
        failed.map((f) => ({ node: f.nb.node, lines: f.lines })),
      );
    },
    { lock: true, log },
  );
}

/** What runs on the nodes now, against the bundle: running, identity, drift, a failed stop. */
export async function inspectDeployment(b: DeploymentBundle, auth: SshAuth): Promise<DeploymentOutcome> {
  return withHosts(b.nodes, auth, async (hosts) => {
    const look = async (nb: NodeBundle) => ({ nb, st: await probeNode(hostFor(hosts, nb.node), nb) });
    // The state keeps a node's identity in English words, and its warnings as messages.
    const seen = (await Promise.all(b.nodes.map(look))).map(({ nb, st }) => {
      const found = driftFindings(nb, st).map((d) => d.said);
      const said = found.length === 0 ? undefined : listMsg(found, "semi");
      return { nb, st, said, drift: said === undefined ? "" : say(said, "en") };
    });
    const nodes: NodeOutcome[] = seen.map(({ nb, st, drift }) => {
      const gone = st.recorded === undefined && !st.running;
      const fine = nb.api !== undefined ? "serving" : "standby";
      const status = st.stopFailed !== undefined ? "failed" : drift === "" ? fine : gone ? "stopped" : "drifted";
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
    });
    const warnings = seen.flatMap(({ said }) =>
      said === undefined ? [] : [msg("serve.look.drifted", { what: said })],
    );
    const stopFailed = seen.filter(({ st }) => st.stopFailed !== undefined);
    if (stopFailed.length > 0) {
      const where = stopFailed.map(
        ({ nb, st }) => `${nb.node} (${st.stopFailed?.at ?? ""}): ${st.stopFailed?.lines ?? ""}`,
      );
      const failure = `stop failed on ${where.join("; ")}`;
      return { status: "failed", nodes, warnings, failure };
    }
    const bad = nodes.find((n) => n.status === "drifted" || n.status === "stopped");
    const allStopped = nodes.every((n) => n.status === "stopped");
    const status = bad === undefined ? "serving" : bad.status === "stopped" && allStopped ? "stopped" : "drifted";
    return { status, nodes, warnings };
  });
}
