/**
 * The memory tripwire: beside the engine on every node where it runs, from its start through the
 * load and while it serves, a small bash loop samples MemAvailable and stops the engine before
 * MemAvailable falls below the floor. On GB10's unified memory a load that takes the last GiB
 * takes the host with it (no SSH, the power button): stopping the engine early keeps the node.
 *
 * It is part of the rendered bundle, for every target: `tripwire.sh` in the deployment's state
 * directory, started by the start script before the engine, stopped by the stop script first, and
 * started by an up that only checks a running engine (serve/serve) where none runs yet.
 *
 * When it trips it stops the engine at once (the target's halt: docker kill, SIGKILL to the
 * process group), writes `tripwire.json` there (when, MemAvailable, the floor: what the look and
 * `sm121 status` read) and a line to the engine's log (`logs/tripwire.log`, which `sm121 logs`
 * shows after a container's log; tmux and native engines get it in `logs/engine.log` too), and
 * ends. It starts before the engine, so it may trip before there is an engine to stop: for
 * SETTLE_SAMPLES more samples it stops whatever of the engine started since (the up's readiness
 * reads the record and fails, naming it). Seed 001's relief (`drop_caches`): before it stops the
 * engine it drops the clean page cache once with `sudo -n` and samples again; a refused sudo is
 * logged once and it works as with the relief off. Its words are English: they are the bundle's,
 * the same bytes in every language.
 *
 * A sample costs no process: /proc/meminfo is read with bash's `read`, and the wait is a `read`
 * with a timeout on a pipe that never speaks.
 */
import type { Site, SiteNode, Tripwire } from "../recipe/types";
import { joinNode, nodePath, quote } from "../text/shell";
import type { LaunchSpec, TargetScripts } from "./types";

/** The files of the tripwire in a deployment's state directory. */
export const TRIPWIRE_FILES = { script: "tripwire.sh", pid: "tripwire.pid", record: "tripwire.json" } as const;

const KIB_PER_GIB = 1024 * 1024;
/** After a trip, how many more samples the tripwire stops whatever of the engine has started since. */
const SETTLE_SAMPLES = 20;

/** A node's tripwire: the site's, with the node's own floor and relief where it sets them. */
export function tripwireOf(site: Pick<Site, "tripwire">, node: Pick<SiteNode, "memFloorGiB" | "memRelief">): Tripwire {
  return {
    floorGiB: node.memFloorGiB ?? site.tripwire.floorGiB,
    sampleS: site.tripwire.sampleS,
    relief: node.memRelief ?? site.tripwire.relief,
  };
}

/**
 * How the tripwire stops the engine of this target at once, without the stop's grace: memory is
 * what it frees, and a graceful shutdown of a load takes longer than the host may have.
 */
function haltScript(spec: LaunchSpec, s: TargetScripts): string {
  const d = nodePath(spec.stateDir);
  const group = (pidFile: string) =>
    `if [ -f ${d}/${pidFile} ]; then kill -KILL -- "-$(cat ${d}/${pidFile})" 2>/dev/null || true; fi`;
  const container =
    s.containerName === undefined ? [] : [`docker kill ${quote(s.containerName)} >/dev/null 2>&1 || true`];
  switch (spec.deploy) {
    case "docker":
      return container.join("\n");
    // start.sh may still wait for its server: it goes first, so that it cannot start it again.
    case "script":
      return [group("launcher.pid"), ...container].join("\n");
    case "tmux":
    case "native":
      // DGPP's manager owns its processes on every node: its own stop takes them down.
      return spec.engine === "dgpp" ? s.stop : group("pid");
  }
}

/** The tripwire's loop, as written to the node. */
export function tripwireScript(spec: LaunchSpec, s: TargetScripts, t: Tripwire, node: string): string {
  const d = nodePath(spec.stateDir);
  const floorKiB = Math.round(t.floorGiB * KIB_PER_GIB);
  const engineLog = spec.deploy === "tmux" || spec.deploy === "native" ? ` ${d}/logs/engine.log` : "";
  const gib = (v: string) => `$(( ${v} / 1048576 )).$(( ${v} % 1048576 * 10 / 1048576 ))`;
  return [
    "#!/usr/bin/env bash",
    `# Written by sm121: the memory tripwire of ${spec.deployment} on ${node} (docs/operating.md).`,
    `# Samples MemAvailable every ${t.sampleS} s; below ${t.floorGiB} GiB it stops the engine at once.`,
    "set -u",
    "export TZ=UTC",
    `floor=${floorKiB}; relief=${quote(t.relief)}; relieved=false`,
    `mkdir -p ${d}/logs`,
    // A pipe nobody writes to: `read -t` on it waits without a process of its own.
    "exec {nap}<> <(:)",
    'avail() { a=; while read -r k v _; do if [ "$k" = MemAvailable: ]; then a=$v; return; fi; done < /proc/meminfo; }',
    `say() { printf '%(%Y-%m-%dT%H:%M:%SZ)T sm121 memory tripwire: %s\\n' -1 "$1" | ` +
      `tee -a ${d}/logs/tripwire.log${engineLog} >/dev/null; }`,
    `halt() {\n  ${haltScript(spec, s).split("\n").join("\n  ") || ":"}\n}`,
    "while :; do",
    "  avail",
    '  if [ -n "$a" ] && [ "$a" -lt "$floor" ]; then',
    '    if [ "$relief" = drop_caches ] && [ "$relieved" = false ]; then',
    "      relieved=true",
    "      if sudo -n sysctl -q -w vm.drop_caches=1 >/dev/null 2>&1; then",
    `        say "MemAvailable ${gib("$a")} GiB below the floor ${t.floorGiB} GiB: ` +
      'dropped the clean page cache, sampling again"',
    "        continue",
    "      fi",
    '      say "the relief (drop the clean page cache with sudo -n) was refused: it works as with the relief off"',
    "    fi",
    "    halt",
    "    stopped=${EPOCHREALTIME/[!0-9]/}",
    "    printf -v at '%(%Y-%m-%dT%H:%M:%SZ)T' -1",
    `    printf '{"at":"%s","stoppedMs":%d,"memAvailableKiB":%d,"floorKiB":%d}\\n' "$at" "$((stopped / 1000))" ` +
      `"$a" "$floor" > ${d}/${TRIPWIRE_FILES.record}.tmp && ` +
      `mv ${d}/${TRIPWIRE_FILES.record}.tmp ${d}/${TRIPWIRE_FILES.record}`,
    `    say "MemAvailable ${gib("$a")} GiB fell below the floor ${t.floorGiB} GiB: stopped the engine"`,
    // The tripwire starts before the engine: one that starts after the trip is stopped too.
    `    for ((i = 0; i < ${SETTLE_SAMPLES}; i++)); do read -rt ${t.sampleS} -u "$nap" _ || :; halt; done`,
    "    exit 0",
    "  fi",
    `  read -rt ${t.sampleS} -u "$nap" _ || :`,
    "done",
    "",
  ].join("\n");
}

/** Sets `twp` to the pid of this deployment's running tripwire, empty when none runs. */
function runningTripwire(stateDir: string): string {
  const d = nodePath(stateDir);
  const mine = `/deployments/${stateDir.split("/").pop() ?? ""}/${TRIPWIRE_FILES.script}`;
  return [
    `twp=; if [ -f ${d}/${TRIPWIRE_FILES.pid} ]; then IFS= read -r twp < ${d}/${TRIPWIRE_FILES.pid} || twp=; fi`,
    // A pid from a file is its only while its command line names its script (pids are reused, a reboot resets them).
    `if [ -n "$twp" ] && ! tr '\\0' ' ' < /proc/"$twp"/cmdline 2>/dev/null | grep -qF -- ${quote(mine)}; then twp=; fi`,
  ].join("\n");
}

/** Starts the deployment's tripwire (after ending one that runs), or only where none runs. */
export function tripwireStart(stateDir: string, onlyIfNone = false): string {
  const d = nodePath(stateDir);
  const start = [
    `mkdir -p ${d} && rm -f ${d}/${TRIPWIRE_FILES.record}`,
    `setsid nohup bash ${d}/${TRIPWIRE_FILES.script} > /dev/null 2>&1 < /dev/null &`,
    `echo $! > ${d}/${TRIPWIRE_FILES.pid}`,
  ];
  if (onlyIfNone) {
    return [
      `if [ -f ${d}/${TRIPWIRE_FILES.script} ]; then`,
      runningTripwire(stateDir),
      '  if [ -z "$twp" ]; then',
      ...start.map((l) => `    ${l}`),
      "  fi",
      "fi",
    ].join("\n");
  }
  return [runningTripwire(stateDir), 'if [ -n "$twp" ]; then kill -- "-$twp" 2>/dev/null || true; fi', ...start].join(
    "\n",
  );
}

/** Ends the deployment's tripwire, if one runs. */
export function tripwireStop(stateDir: string): string {
  const d = nodePath(stateDir);
  return [
    runningTripwire(stateDir),
    'if [ -n "$twp" ]; then kill -- "-$twp" 2>/dev/null || true; fi',
    `rm -f ${d}/${TRIPWIRE_FILES.pid}`,
  ].join("\n");
}

/**
 * A target's scripts with the tripwire beside the engine: its script among the files, started
 * before the engine, ended before the stop, and (a container) its lines after the container's log.
 * A floor of 0, or a rank that runs no process, has none.
 */
export function withTripwire(spec: LaunchSpec, s: TargetScripts, t: Tripwire, node: string): TargetScripts {
  if (t.floorGiB <= 0 || !spec.runs) return s;
  const d = nodePath(spec.stateDir);
  const file = {
    path: joinNode(spec.stateDir, TRIPWIRE_FILES.script),
    content: tripwireScript(spec, s, t, node),
    mode: 0o755,
    backup: false,
  };
  const container = spec.deploy === "docker" || spec.deploy === "script";
  const tail = `tail -n "\${SM121_LINES:-100}" ${d}/logs/tripwire.log 2>/dev/null || true`;
  return {
    ...s,
    files: [...s.files, file],
    start: [tripwireStart(spec.stateDir), s.start].join("\n"),
    stop: [tripwireStop(spec.stateDir), s.stop].join("\n"),
    logs: container
      ? `if [ "\${SM121_FOLLOW:-0}" != 1 ]; then ( ${s.logs} ); ${tail}; else ${tail}; ${s.logs}; fi`
      : s.logs,
  };
}
