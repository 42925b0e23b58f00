/** deploy = "docker": one container per rank, named sm121-<deployment>-<rank>, stopped by label. */
import { accessFlags } from "../fabric/access.targets";
import { containerLogs, containersLeft, containerStatus, keyFileScript, waitGone } from "./common";
import { joinNode, nodePath, quote, quoteArgv } from "../text/shell";
import type { ContainerAccess, LaunchSpec, TargetScripts } from "./types";
import { exportSecrets, SECRETS_ENV_KEYS } from "./secretsenv";

export function containerName(spec: LaunchSpec): string {
  return `sm121-${spec.deployment}-${spec.rank}`;
}

/** The container's env file, read by `docker run --env-file`: KEY=value, one per line. */
function envFileText(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `${k}=${v}\n`)
    .join("");
}

function mountArg(m: string): string {
  const [src = "", ...rest] = m.split(":");
  return `-v ${nodePath(src)}:${quote(rest.join(":"))}`;
}

/**
 * What every container of a deployment gets from the node: its network, the GPUs, IPC and shared
 * memory, and the RDMA access (fabric/env.render.ts). The engine's container and the link test's
 * (fabric/linkrun.serve.ts) are run with these same flags.
 */
export function containerFlags(access: ContainerAccess | undefined): string[] {
  const rdma = access === undefined ? [] : [accessFlags(access).join(" ")];
  return ["--network host --gpus all --ipc host --shm-size 64g", ...rdma];
}

export function dockerTarget(spec: LaunchSpec, identity: string): TargetScripts {
  const name = containerName(spec);
  const d = nodePath(spec.stateDir);
  const [entry = "", ...cmd] = spec.argv;
  const label = `sm121.deployment=${spec.deployment}`;
  const runArgv = [
    "docker run -d",
    `--name ${quote(name)}`,
    `--label ${quote(label)}`,
    `--label ${quote(`sm121.rank=${spec.rank}`)}`,
    `--label ${quote(`sm121.identity=${identity}`)}`,
    ...containerFlags(spec.access),
    `--env-file ${d}/engine.env`,
    '"${secrets[@]}"',
    ...spec.mounts.map(mountArg),
    ...(spec.keyFile === undefined ? [] : [mountArg(`${spec.keyFile.path}:${spec.keyFile.seenAs}:ro`)]),
    `--entrypoint ${quote(entry)}`,
    quote(spec.image ?? ""),
    quoteArgv(cmd),
  ].join(" \\\n  ");
  const start = [
    exportSecrets(spec.stateDir, true),
    ...(spec.keyFile === undefined ? [] : [keyFileScript(spec.keyFile.path)]),
    `docker rm -f ${quote(name)} >/dev/null 2>&1 || true`,
    `${runArgv} >/dev/null`,
  ].join("\n");
  const filter = `--filter label=${quote(label)}`;
  const stop = [
    `ids=$(docker ps -aq ${filter})`,
    'if [ -n "$ids" ]; then',
    // An engine stopped by a signal (SIGSTOP, a debugger) takes no SIGTERM until it continues.
    "  docker kill -s CONT $ids >/dev/null 2>&1 || true",
    "  docker stop -t 30 $ids >/dev/null || true; docker rm -f $ids >/dev/null || true",
    waitGone(
      containersLeft(filter, `the container of ${spec.deployment}`),
      30,
      `container of ${spec.deployment}`,
    ).replace(/^/gm, "  "),
    "fi",
  ].join("\n");
  return {
    files: [
      { path: joinNode(spec.stateDir, "engine.env"), content: envFileText(spec.env), mode: 0o644, backup: false },
    ],
    start,
    stop,
    status: containerStatus(name),
    logs: containerLogs(name),
    launch: runArgv.replace(
      '"${secrets[@]}"',
      `[${SECRETS_ENV_KEYS.map((k) => `-e ${k}`).join(" ")}: each from ` + `${d}/secrets.env when it holds it]`,
    ),
    statusAsksApi: false,
    containerName: name,
  };
}
