/** Shell pieces shared by the targets. Every script runs under `set -euo pipefail` on `bash -s`. */
import { printRecord } from "../protocol";
import { joinNode, lastErrorLine, nodePath, quote, quoteArgv } from "../text/shell";
import type { BundleFile, LaunchSpec, TargetScripts } from "./types";
import { exportSecrets } from "./secretsenv";
import { lookedContainer, lookedImage } from "./dockerlook";
import { msg, type MessageKey, type Msg } from "../text/messages";

/** The `status` record from shell variables $running, $started and $detail (why not running). */
export const STATUS_RECORD =
  'at=null; if [ -n "$started" ]; then at="\\"$started\\""; fi; ' +
  printRecord("status", '"running":%s,"startedAt":%s,"detail":"%s"', '"$running" "$at" "${detail:-}"');

/**
 * Why the engine does not run, as a status script prints it (its record's `detail`), and the
 * message that says it in the reader's language. The scripts are part of the bundle, the same
 * bytes in every language, so these English words are their protocol; the plan says them
 * through this table. Docker's own error follows DOCKER_DOWN as docker printed it.
 */
export const NOT_RUNNING = {
  "container gone": "serve.look.containerGone",
  "container exited": "serve.look.containerExited",
  "process gone": "serve.look.processGone",
  "tmux session gone": "serve.look.tmuxGone",
} as const satisfies Record<string, MessageKey>;
export type NotRunning = keyof typeof NOT_RUNNING;
const DOCKER_DOWN = "docker does not answer: ";

/** A status record's `detail` in the reader's language: sm121's own words by the table, anything else as printed. */
export function notRunningMsg(detail: string): Msg | string {
  if (Object.hasOwn(NOT_RUNNING, detail)) return msg(NOT_RUNNING[detail as NotRunning]);
  if (detail.startsWith(DOCKER_DOWN)) return msg("serve.look.dockerDown", { error: detail.slice(DOCKER_DOWN.length) });
  return detail;
}

/** Waits until `cond` (a shell condition) is false, up to `seconds`; fails with `what` otherwise. */
export function waitGone(cond: string, seconds: number, what: string): string {
  return [
    `for _ in $(seq 1 ${seconds * 5}); do ${cond} || break; sleep 0.2; done`,
    `if ${cond}; then echo ${quote(`sm121: ${what} still running after ${seconds} s`)} >&2; exit 1; fi`,
  ].join("\n");
}

/** Lines that export env vars for bash, quoted; a value `~/...` is a node path the node's shell expands (HF_HOME). */
export function exportLines(env: Record<string, string>): string {
  return Object.entries(env)
    .map(([k, v]) => `export ${k}=${v === "~" || v.startsWith("~/") ? nodePath(v) : quote(v)}`)
    .join("\n");
}

/**
 * Writes the engine's key file (0600) from API_KEY as exportSecrets read it: `api-key: '<key>'`
 * as a YAML single-quoted scalar (a quote doubled; the plan allows only printable ASCII in the
 * key), or `{}` without a key, so the file the argv names exists.
 */
export function keyFileScript(keyFile: string): string {
  const f = nodePath(keyFile);
  const write = `if [ -n "$key" ]; then printf "api-key: '%s'\\n" "\${key//$q/$q$q}"; else printf '{}\\n'; fi`;
  return `q="'"; key=\${API_KEY:-}; ( umask 077; ${write} > ${f}.sm121-tmp ) && mv ${f}.sm121-tmp ${f}; unset key`;
}

/** run.sh for tmux and native: env, secrets, then exec the argv with the log appended. */
export function runScript(
  stateDir: string,
  env: Record<string, string>,
  argvLine: string,
  workDir?: string,
  keyFile?: string,
): string {
  const d = nodePath(stateDir);
  return [
    "#!/usr/bin/env bash",
    "# Written by sm121: the engine's environment and exact command line.",
    "set -euo pipefail",
    exportLines(env),
    exportSecrets(stateDir),
    ...(keyFile === undefined ? [] : [keyFileScript(keyFile)]),
    `mkdir -p ${d}/logs`,
    `date -u +%Y-%m-%dT%H:%M:%SZ > ${d}/started-at`,
    ...(workDir === undefined ? [] : [`cd ${nodePath(workDir)}`]),
    `exec ${argvLine} >> ${d}/logs/engine.log 2>&1`,
    "",
  ].join("\n");
}

/** Sets `started` to the start time the start script wrote (empty when there is none), without a fork. */
export function readStartedAt(stateDir: string): string {
  const f = `${nodePath(stateDir)}/started-at`;
  return `started=; if [ -r ${f} ]; then IFS= read -r started < ${f} || true; fi`;
}

/** Status of a deployment whose running state is the shell condition `cond`; start time from started-at. */
function statusWhen(cond: string, stateDir: string, gone: NotRunning): string {
  return [
    `running=false; started=""; detail=${quote(gone)}`,
    `if ${cond}; then running=true; detail=""; ${readStartedAt(stateDir)}; fi`,
    STATUS_RECORD,
  ].join("\n");
}

/**
 * A shell condition that holds while `docker ps -aq <filter>` lists a container. `docker ps` fails
 * when the daemon does not answer (stopped, restarting, a socket the user may not use): the script
 * then ends with docker's error, as a container nobody can see is not gone.
 */
export function containersLeft(filter: string, what: string): string {
  const error = lastErrorLine(`docker ps -aq ${filter}`);
  const unknown = `echo "sm121: docker does not answer, so whether ${what} is gone is unknown: ${error}" >&2; exit 1`;
  return `{ if ! left=$(docker ps -aq ${filter} 2>/dev/null); then ${unknown}; fi; [ -n "$left" ]; }`;
}

/**
 * Status of a container by name, as docker reports its start. `docker inspect` fails alike for a
 * missing container and for a daemon that does not answer; `docker ps` tells them apart by its exit
 * code, and then docker's own error is why the engine does not run.
 *
 * With `mounts`, the same `docker inspect` also lists the container's bind mounts, and a `mount`
 * record follows for each regular file mounted: its path (base64: a name may hold any character)
 * and its change time, for seed 001's newer-mount rule (serve/probe); a directory is seen live
 * through its mount. With `looked`, the plan-time look's one docker call for the whole node has
 * answered already (./dockerlook): the container's state and bind mounts are read from it, and
 * an answer without the container is a container gone, no answer at all docker's error.
 *
 * With `image` (and `mounts` or `looked`), an `imageIds` record says which image the container runs
 * and which the reference names now (both IDs), where the node has both: a tag moved under a
 * running engine (serve/drift).
 */
export function containerStatus(name: string, o: { mounts?: boolean; looked?: boolean; image?: string } = {}): string {
  const filter = `--filter ${quote(`name=^/${name}$`)}`;
  const binds = '{{range .Mounts}}{{if eq .Type "bind"}}{{println}}{{.Source}}{{end}}{{end}}';
  const withBinds = quote(`{{.Image}} {{.State.Running}} {{.State.StartedAt}}${binds}`);
  // The look's one docker call has answered for every container of the node (./dockerlook).
  const state = o.looked
    ? [lookedContainer(name)]
    : o.mounts
      ? [
          `info=$(docker inspect -f ${withBinds} ${quote(name)} 2>/dev/null || true)`,
          'mapfile -t lines <<< "$info"',
          'cimage=; state=; if [ -n "${lines[0]:-}" ]; then cimage=${lines[0]%% *}; state=${lines[0]#* }; fi',
        ]
      : [`state=$(docker inspect -f '{{.State.Running}} {{.State.StartedAt}}' ${quote(name)} 2>/dev/null || true)`];
  const mounts =
    o.mounts || o.looked
      ? [
          'for ms in "${lines[@]:1}"; do',
          '  [ -f "$ms" ] || continue; mc=$(stat -L -c %Z -- "$ms") || continue',
          `  ${printRecord("mount", '"path64":"%s","ctime":%s', `"$(printf '%s' "$ms" | base64 -w0)" "$mc"`)}`,
          "done",
        ]
      : [];
  const tag =
    o.image === undefined || !(o.looked || o.mounts)
      ? []
      : [
          o.looked
            ? lookedImage(o.image)
            : `timage=$(docker image inspect -f '{{.Id}}' ${quote(o.image)} 2>/dev/null) || timage=`,
          `if [ -n "$cimage" ] && [ -n "$timage" ]; then ${IMAGE_IDS_RECORD}; fi`,
        ];
  return [
    ...state,
    `running=false; started=""; detail="${"container gone" satisfies NotRunning}"`,
    'case "$state" in "true "*) running=true; detail=""; started=${state#true };; ' +
      `"false "*) detail="${"container exited" satisfies NotRunning}";; esac`,
    ...(o.looked
      ? [`if [ -z "$state" ] && [ "$dkup" != true ]; then detail="${DOCKER_DOWN}$dkerr"; fi`]
      : [
          `if [ -z "$state" ] && ! docker ps -aq ${filter} >/dev/null 2>&1; then`,
          `  detail="${DOCKER_DOWN}${lastErrorLine(`docker ps -aq ${filter}`)}"`,
          "fi",
        ]),
    STATUS_RECORD,
    ...mounts,
    ...tag,
  ].join("\n");
}

const IMAGE_IDS_RECORD = printRecord("imageIds", '"runs":"%s","tag":"%s"', '"$cimage" "$timage"');

/** A container's log: $SM121_LINES lines, followed when $SM121_FOLLOW=1. */
export function containerLogs(name: string): string {
  const c = quote(name);
  return (
    `if [ "\${SM121_FOLLOW:-0}" = 1 ]; then exec docker logs -f --tail "\${SM121_LINES:-100}" ${c} 2>&1; ` +
    `else docker logs --tail "\${SM121_LINES:-100}" ${c} 2>&1 || true; fi`
  );
}

export function logsScript(file: string): string {
  return (
    `if [ "\${SM121_FOLLOW:-0}" = 1 ]; then exec tail -n "\${SM121_LINES:-100}" -F ${file}; ` +
    `else tail -n "\${SM121_LINES:-100}" ${file} 2>/dev/null || true; fi`
  );
}

/** The engine's argv as run.sh's shell line: the key file's `~/` path is the one word the node's shell expands. */
export function runArgvLine(spec: LaunchSpec): string {
  const key = spec.keyFile;
  return key === undefined
    ? quoteArgv(spec.argv)
    : spec.argv.map((a) => (a === key.seenAs ? nodePath(a) : quoteArgv([a]))).join(" ");
}

/** run.sh of the tmux and native targets: the engine's environment and exact command line. */
function runFile(spec: LaunchSpec): BundleFile {
  return {
    path: joinNode(spec.stateDir, "run.sh"),
    content: runScript(spec.stateDir, spec.env, runArgvLine(spec), undefined, spec.keyFile?.path),
    mode: 0o755,
    backup: false,
  };
}

/**
 * A target that runs run.sh under a supervisor of its own (a tmux session, a setsid process
 * group): running while the shell condition `alive` holds, its log in logs/engine.log.
 */
export function runShTarget(
  spec: LaunchSpec,
  alive: string,
  gone: NotRunning,
  s: { start: string; stop: string; launch: string },
): TargetScripts {
  return {
    files: [runFile(spec)],
    start: s.start,
    stop: s.stop,
    status: statusWhen(alive, spec.stateDir, gone),
    logs: logsScript(`${nodePath(spec.stateDir)}/logs/engine.log`),
    launch: s.launch,
    statusAsksApi: false,
  };
}
