/**
 * `sm121 logs <deployment> [--node N] [--follow] [--lines N]`: the engine log of every node of a
 * deployment through the target's logs script ($SM121_LINES, $SM121_FOLLOW=1), each line prefixed
 * with the node name. --follow streams from all nodes until Ctrl-C.
 *
 * Closing an ssh channel does not signal the process behind it, so a followed log runs beside a
 * heartbeat: when the channel is gone, the heartbeat's write fails and the follower is killed, and
 * nothing is left behind on the node.
 *
 * An engine may print a secret in its log (SGLang prints its `api_key` with its arguments at
 * start), which `pulumi up` masks: so does this. Before the log, each node says the secrets sm121
 * keeps there for the deployment (secrets.env, a script recipe's .env: what the engine was given),
 * and every line printed, from any node, has each of them and every `API_KEY=`-like value masked.
 */
import { withHosts, type Host } from "../remote";
import type { NodeBundle } from "../render/types";
import { printRecord, recordsOf } from "../protocol";
import { maskSecrets } from "../serve/failure";
import { keyFiles } from "../serve/readiness";
import { SECRETS_ENV_KEYS } from "../targets/secretsenv";
import { ASSIGNMENT_READER } from "../text/assign";
import { nodePath } from "../text/shell";
import { UsageError, bool, num, type Parsed } from "./args";
import { cliAuth, hostOf, selectedDeployment, selectedNode } from "./connect";
import { contextProject, type CliContext } from "./context";
import { t } from "../text/messages";
import { pad } from "./table";

const HEARTBEAT = "@sm121-heartbeat";

export function logsScript(nb: NodeBundle, lines: number, follow: boolean): string {
  const env = `SM121_LINES=${lines}; SM121_FOLLOW=${follow ? 1 : 0}; export SM121_LINES SM121_FOLLOW`;
  if (!follow) return `( ${env}; ${nb.logs} ) 2>&1`;
  return [
    `( ${env}; ${nb.logs} ) 2>&1 &`,
    "pid=$!",
    'stop() { kill "$pid" 2>/dev/null; exit 0; }',
    "trap stop PIPE HUP INT TERM",
    `while kill -0 "$pid" 2>/dev/null; do sleep 1; echo ${HEARTBEAT} || stop; done`,
    'wait "$pid"',
  ].join("\n");
}

/** The values of the secrets sm121 keeps on the node for the deployment, one record each. */
export function heldSecretsScript(nb: NodeBundle): string {
  const value = printRecord("heldSecret", '"value64":"%s"', `"$(printf '%s' "$REPLY" | base64 -w0)"`);
  return [
    ASSIGNMENT_READER,
    `for f in ${keyFiles(nb).map(nodePath).join(" ")}; do for k in ${SECRETS_ENV_KEYS.join(" ")}; do`,
    `  if sm121_get "$f" "$k" && [ -n "$REPLY" ]; then ${value}; fi`,
    "done; done; true",
  ].join("\n");
}

async function heldSecrets(nb: NodeBundle, h: Host): Promise<string[]> {
  const res = await h.run(heldSecretsScript(nb), { step: "logs", allowFailure: true, timeoutMs: 30_000 });
  return recordsOf(res.records, "heldSecret").map((r) => Buffer.from(r.value64, "base64").toString("utf8"));
}

export async function logsCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const project = contextProject(ctx);
  const b = selectedDeployment(project.bundles, p.positional[0], ctx.stack, true);
  const only = selectedNode(project.site, p);
  const lines = num(p, "lines", 100);
  if (!Number.isInteger(lines) || lines < 0) throw new UsageError(t("logs.badLines", { lines: String(lines) }));
  const follow = bool(p, "follow");
  const nodes = b.nodes.filter((nb) => (only === undefined || nb.node === only) && nb.logs !== ":");
  if (nodes.length === 0) {
    const names = b.nodes.map((n) => n.node).join(", ");
    ctx.err(
      only === undefined
        ? t("logs.noLogs", { deployment: b.deployment, nodes: names })
        : t("logs.noNodes", { deployment: b.deployment, node: only, nodes: names }),
    );
    return 2;
  }
  const width = Math.max(...nodes.map((n) => n.node.length));
  const { auth } = cliAuth(project.site, p, process.env, ctx.pulumi);
  return withHosts(nodes, auth, async (hosts) => {
    let stopping = false;
    const stop = () => {
      stopping = true;
      // Ending the connections ends the channels; each node's heartbeat then stops its follower.
      for (const h of hosts.values()) h.close();
    };
    // `sm121 logs x --follow | head`: when the reader goes away, stop as on Ctrl-C.
    const onPipe = (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE") stop();
    };
    process.stdout.on("error", onPipe);
    if (follow) {
      process.once("SIGINT", stop);
      process.once("SIGTERM", stop);
    }
    // Every node's secrets mask every node's lines: a key is the same on the nodes of a deployment.
    const held = (await Promise.all(nodes.map((nb) => heldSecrets(nb, hostOf(hosts, nb))))).flat();
    const own = process.env["SM121_API_KEY"];
    const secrets = Object.fromEntries([...held, ...(own === undefined ? [] : [own])].map((v, i) => [String(i), v]));
    const out = (l: string) => ctx.out(maskSecrets(l, secrets));
    const err = (l: string) => ctx.err(maskSecrets(l, secrets));
    const one = async (nb: NodeBundle, h: Host): Promise<boolean> => {
      const prefix = `${pad(nb.node, width)} | `;
      try {
        // Both streams are passed on as they come and not kept: a followed log has no end.
        await h.run(logsScript(nb, lines, follow), {
          step: "logs",
          allowFailure: true,
          onLine: (l) => {
            if (l !== HEARTBEAT && !stopping) out(prefix + l);
          },
          onErrLine: (l) => {
            if (l.trim() !== "" && !stopping) err(prefix + l);
          },
        });
        return true;
      } catch (e) {
        if (stopping) return true;
        err(prefix + (e instanceof Error ? e.message : String(e)));
        return false;
      }
    };
    try {
      const ok = await Promise.all(nodes.map((nb) => one(nb, hostOf(hosts, nb))));
      return ok.every(Boolean) ? 0 : 1;
    } finally {
      process.stdout.removeListener("error", onPipe);
      process.removeListener("SIGINT", stop);
      process.removeListener("SIGTERM", stop);
    }
  });
}
