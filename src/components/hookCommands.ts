/**
 * `sm121:hooks: pulumi-command`: a recipe's hooks as @pulumi/command resources, for operators who
 * have the command provider plugin installed. The package is no dependency of sm121 (the default
 * install and `pulumi about` involve no command plugin): `npm run hooks:install` adds it, and
 * this module loads it only in that mode (commandPackage), failing the plan with how to install it.
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

/** What sm121 uses of @pulumi/command 1.2.1 (the version `npm run hooks:install` installs). */
interface CommandArgs {
  create?: string;
  delete?: string;
  triggers: unknown[];
}
interface RemoteConnection {
  host: string;
  port: number;
  user: string;
  hostKey: string;
  privateKey?: string;
  privateKeyPassword?: string;
}
type CommandClass<A> = new (name: string, args: A, opts?: pulumi.CustomResourceOptions) => pulumi.CustomResource;
interface CommandPackage {
  local: { Command: CommandClass<CommandArgs> };
  remote: { Command: CommandClass<CommandArgs & { connection: pulumi.Input<RemoteConnection> }> };
}

let loaded: CommandPackage | undefined;

/** @pulumi/command, loaded once; a refusal that says how to install it when it is missing. */
export function commandPackage(): CommandPackage {
  if (loaded !== undefined) return loaded;
  try {
    require.resolve("@pulumi/command");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND") throw refusal(t("serve.commandMissing"));
    throw e;
  }
  loaded = require("@pulumi/command") as CommandPackage;
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
  const command = commandPackage();
  // The stamp changes only on a run that restarts the engine; a steady run keeps the stored one.
  const starts = a.restart || a.drift.length > 0;
  const stamp = starts ? `start ${new Date().toISOString()}` : "steady";
  const opts: pulumi.CustomResourceOptions = {
    parent,
    deleteBeforeReplace: true,
    ...(!starts && { ignoreChanges: ["triggers[2]"] }),
  };
  return b.nodes.map((n) => {
    const commands = {
      ...(create !== undefined && { create }),
      ...(remove !== undefined && { delete: remove }),
      triggers: [n.identity, a.secrets, stamp],
    };
    if (n.conn.kind === "local") return new command.local.Command(`${name}-hooks-${n.node}`, commands, opts);
    const { host, port, user } = n.conn;
    const hostKey = pinnedHostKey(expandHome(a.knownHosts), host, port);
    if (hostKey === undefined) {
      const known = port === 22 ? host : `[${host}]:${port}`;
      throw refusal(t("hooks.noHostKey", { knownHosts: a.knownHosts, known, node: n.node, port, host }));
    }
    const connection = output(a.connection).apply((c) => ({
      host,
      port,
      user,
      hostKey,
      ...(c.privateKey !== undefined && c.privateKey !== "" && { privateKey: c.privateKey }),
      ...(c.passphrase !== undefined && c.passphrase !== "" && { privateKeyPassword: c.passphrase }),
    }));
    return new command.remote.Command(`${name}-hooks-${n.node}`, { connection, ...commands }, opts);
  });
}
