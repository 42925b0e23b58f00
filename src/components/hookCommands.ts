/**
 * `sm121:hooks: pulumi-command`: a recipe's hooks as @pulumi/command resources, for operators who
 * have the command provider plugin installed. The package is a dependency of sm121 (its types are
 * the contract sm121's arguments compile against); this module loads it only in that mode, so the
 * default program registers and loads nothing of it, and needs no plugin.
 *
 * One Command per node of the deployment, `<name>-hooks-<node>` (`command:remote:Command`, or
 * `command:local:Command` for a `host: local` node), which the engine depends on:
 * - create: the before_serve hooks, so they run before the engine starts;
 * - delete: the after_stop hooks: on destroy or a removal from the site after the engine stopped
 *   (dependents are deleted first); on a restart, the Command is replaced ahead of the engine
 *   (delete before replace), so after_stop and before_serve run just before the engine's stop and
 *   start. A Pulumi resource cannot run inside another one's update, which is why the built-in
 *   path (hooks inside the engine's own sequence) stays the default.
 * - triggers: what makes the engine start, as far as the program knows it at plan time, from the
 *   inputs EngineDeployment's decide() reads: the node's bundle identity, the secrets, and a stamp
 *   of this run when the plan-time look found drift or SM121_RESTART=1 is set (otherwise the stamp
 *   is ignored, so a run with nothing to do replaces nothing). An engine that restarts because its
 *   last up failed, with nothing found on its nodes, restarts without its hooks in this mode.
 *
 * The connection pins each node's host key: pulumi-command's `hostKey` takes one key (an
 * authorized_keys line) and refuses any other; sm121 takes it from the site's known_hosts, which
 * the plan-time look at the nodes has just verified (and, with accept-new, recorded).
 */
import type * as pulumi from "@pulumi/pulumi";
import type * as command from "@pulumi/command";
import { refusal } from "./refusal";
import { output } from "@pulumi/pulumi/output";
import { pinnedHostKey } from "../remote/knownhosts";
import type { ConnectionSettings } from "../providers/settings";
import type { DeploymentBundle } from "../render/types";
import { hookLines } from "../serve/registry";
import { t, type Msg } from "../text/messages";
import { quote } from "../text/shell";
import { expandHome } from "../text/home";

export interface HookCommandArgs {
  bundle: DeploymentBundle;
  connection: pulumi.Input<ConnectionSettings>;
  secrets: pulumi.Input<Record<string, pulumi.Input<string>>>;
  /** The site's known_hosts (`sm121:knownHosts`): where each node's pinned host key comes from. */
  knownHosts: string;
  /** What the plan-time look found on the deployment's nodes, and SM121_RESTART=1: the engine restarts. */
  drift: readonly Msg[];
  restart: boolean;
}

let loaded: typeof command | undefined;

/** @pulumi/command, loaded once, in this mode only. */
function commandPackage(): typeof command {
  loaded ??= require("@pulumi/command") as typeof command;
  return loaded;
}

/** A bash run of the hook lines (the node user's login shell may be another one). */
function script(kind: "before_serve" | "after_stop", commands: readonly string[]): string | undefined {
  return commands.length === 0 ? undefined : `bash -c ${quote(hookLines(kind, commands))}`;
}

/** The hook Commands of a deployment, one per node; none when its recipe has no hooks. */
export function hookCommands(name: string, a: HookCommandArgs, parent: pulumi.Resource): pulumi.Resource[] {
  const b = a.bundle;
  const create = script("before_serve", b.hooks.beforeServe);
  const remove = script("after_stop", b.hooks.afterStop);
  if (create === undefined && remove === undefined) return [];
  const pkg = commandPackage();
  // The stamp changes only on a run that restarts the engine; a steady run keeps the stored one.
  const starts = a.restart || a.drift.length > 0;
  const stamp = starts ? `start ${new Date().toISOString()}` : "steady";
  const opts: pulumi.CustomResourceOptions = {
    parent,
    deleteBeforeReplace: true,
    ...(!starts && { ignoreChanges: ["triggers[2]"] }),
  };
  return b.nodes.map((n) => {
    const commands: command.local.CommandArgs = {
      ...(create !== undefined && { create }),
      ...(remove !== undefined && { delete: remove }),
      triggers: [n.identity, a.secrets, stamp],
    };
    if (n.conn.kind === "local") return new pkg.local.Command(`${name}-hooks-${n.node}`, commands, opts);
    const { host, port, user } = n.conn;
    const hostKey = pinnedHostKey(expandHome(a.knownHosts), host, port);
    if (hostKey === undefined) {
      const known = port === 22 ? host : `[${host}]:${port}`;
      throw refusal(t("hooks.noHostKey", { knownHosts: a.knownHosts, known, node: n.node, port, host }));
    }
    const connection = output(a.connection).apply((c): command.types.input.remote.ConnectionArgs => ({
      host,
      port,
      user,
      hostKey,
      ...(c.privateKey !== undefined && c.privateKey !== "" && { privateKey: c.privateKey }),
      ...(c.passphrase !== undefined && c.passphrase !== "" && { privateKeyPassword: c.passphrase }),
    }));
    const args: command.remote.CommandArgs = { connection, ...commands };
    return new pkg.remote.Command(`${name}-hooks-${n.node}`, args, opts);
  });
}
