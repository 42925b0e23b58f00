/**
 * deploy = "script" (seed 001): a node-side recipe directory with start.sh and stop.sh that sm121
 * does not change. sm121 writes only its `.env` (with a backup) and a log under logs/. start.sh
 * runs in a new session (setsid) with `env -i`, so a lost ssh connection cannot stop it and the
 * .env alone sets the recipe keys.
 */
import type { NodeRecipe } from "../recipe/types";
import { containerLogs, containersLeft, containerStatus, waitGone } from "./common";
import { joinNode, nodePath, quote } from "../text/shell";
import type { LaunchSpec, TargetScripts } from "./types";

export function scriptTarget(spec: LaunchSpec, nodeRecipe: NodeRecipe, envText: string): TargetScripts {
  const dir = nodePath(nodeRecipe.dir);
  const d = nodePath(spec.stateDir);
  const cleanEnv = 'env -i HOME="$HOME" PATH="$PATH" USER="${USER:-}" LANG=C.UTF-8';
  const start = [
    `cd ${dir}`,
    "mkdir -p logs",
    "log=logs/sm121-up-$(date -u +%Y%m%dT%H%M%SZ).log",
    `mkdir -p ${d}`,
    `ln -sfn "$PWD/$log" ${d}/up.log`,
    `rm -f ${d}/launcher.exit`,
    // start.sh runs until its server is ready: while it runs a missing container means "starting";
    // its exit code, kept in launcher.exit, tells readiness when it gave up.
    `setsid bash -c 'env -i HOME="$0" PATH="$1" USER="$2" LANG=C.UTF-8 bash "$3" > "$4" 2>&1 < /dev/null; ` +
      `echo $? > "$5"' "$HOME" "$PATH" "\${USER:-}" ${quote(nodeRecipe.start)} "$log" ${d}/launcher.exit ` +
      "> /dev/null 2>&1 < /dev/null &",
    `echo $! > ${d}/launcher.pid`,
  ].join("\n");
  // stop.sh reads the .env, so it runs before the new .env is written; it returns before the
  // memory is free, which the memory gate then waits for.
  const filter = `--filter ${quote(`name=^/${nodeRecipe.container}$`)}`;
  const gone = containersLeft(filter, `container ${nodeRecipe.container}`);
  const stop = [
    // A start.sh of an earlier up may still wait for its server: end it first, so that it can
    // neither report on nor remove the server that this up starts.
    `if [ -f ${d}/launcher.pid ]; then kill -TERM -- "-$(cat ${d}/launcher.pid)" 2>/dev/null || true; ` +
      `rm -f ${d}/launcher.pid ${d}/launcher.exit; fi`,
    `if [ -f ${dir}/${quote(nodeRecipe.stop)} ]; then (cd ${dir} && ${cleanEnv} bash ${quote(nodeRecipe.stop)}); fi`,
    waitGone(gone, 60, `container ${nodeRecipe.container}`),
  ].join("\n");
  return {
    files: [{ path: joinNode(nodeRecipe.dir, ".env"), content: envText, mode: 0o600, backup: true }],
    start,
    stop,
    status: containerStatus(nodeRecipe.container),
    logs: containerLogs(nodeRecipe.container),
    launch:
      `cd ${nodeRecipe.dir} && setsid env -i HOME=$HOME PATH=$PATH bash ${nodeRecipe.start} ` +
      "> logs/sm121-up-<UTC>.log 2>&1 &",
    statusAsksApi: false,
    containerName: nodeRecipe.container,
  };
}
