/**
 * deploy = "native": a detached process (setsid, its own process group) with pid and log files.
 * For a head-coordinated engine only rank 0 runs: DGPP's `scripts/dgpp-cluster up` under nohup in
 * its checkout, log under <dir>/log/, stopped with `scripts/dgpp-cluster down`.
 */
import { STATUS_RECORD, exportLines, readStartedAt, logsScript, runArgvLine, runShTarget, waitGone } from "./common";
import { nodePath, quote } from "../text/shell";
import type { LaunchSpec, TargetScripts } from "./types";

export function nativeTarget(spec: LaunchSpec): TargetScripts {
  const d = nodePath(spec.stateDir);
  const alive = `{ [ -f ${d}/pid ] && kill -0 -- "-$(cat ${d}/pid)" 2>/dev/null; }`;
  const start = [
    `mkdir -p ${d}/logs`,
    `setsid nohup bash ${d}/run.sh > /dev/null 2>&1 < /dev/null &`,
    `echo $! > ${d}/pid`,
  ].join("\n");
  const stop = [
    // An engine stopped by a signal (SIGSTOP, a debugger) takes no SIGTERM until it continues.
    `if ${alive}; then kill -CONT -- "-$(cat ${d}/pid)" 2>/dev/null || true; fi`,
    // SIGTERM to the engine's own process (run.sh execs it), as docker stop does: vLLM then refuses new
    // requests and lets its engine core finish what runs (--shutdown-timeout); a signal to the whole group
    // would reach the engine core too and cut the streams in flight. The group after the grace, then KILL.
    `if ${alive}; then kill -TERM "$(cat ${d}/pid)" 2>/dev/null || true; fi`,
    `for _ in $(seq 1 150); do ${alive} || break; sleep 0.2; done`,
    `if ${alive}; then kill -TERM -- "-$(cat ${d}/pid)" 2>/dev/null || true; fi`,
    `for _ in $(seq 1 25); do ${alive} || break; sleep 0.2; done`,
    `if ${alive}; then kill -KILL -- "-$(cat ${d}/pid)" 2>/dev/null || true; sleep 0.5; fi`,
    waitGone(alive, 5, `process group of ${spec.deployment}`),
    `rm -f ${d}/pid`,
  ].join("\n");
  return runShTarget(spec, alive, "process gone", {
    start,
    stop,
    launch: `setsid nohup bash ${spec.stateDir}/run.sh &  # run.sh: exec ${runArgvLine(spec)}`,
  });
}

/** The head-coordinated native launch of DGPP: `dgpp-cluster up/down --config <json>` on rank 0. */
export function dgppNativeTarget(
  spec: LaunchSpec,
  dgppDir: string,
  configPath: string,
  api: { host: string; port: number },
  release?: { name: string } | { rev: string },
): TargetScripts {
  const dir = nodePath(dgppDir);
  const cfg = nodePath(configPath);
  const d = nodePath(spec.stateDir);
  if (!spec.runs) {
    const none = 'running=false; started=""\n' + STATUS_RECORD;
    return {
      files: [],
      start: ":",
      stop: ":",
      status: none,
      statusAsksApi: false,
      logs: ":",
      launch: "(rank 0 brings this node up)",
    };
  }
  const start = [
    // The node's environment for DGPP (HF_HOME: where its preflight looks for the checkpoint).
    exportLines(spec.env),
    `cd ${dir}`,
    "mkdir -p log",
    `mkdir -p ${d}`,
    `date -u +%Y-%m-%dT%H:%M:%SZ > ${d}/started-at`,
    `log=log/sm121-up-$(date -u +%Y%m%dT%H%M%SZ).log`,
    `ln -sfn "$PWD/$log" ${d}/engine.log`,
    // Release names are short revs: the pinned rev's, resolved in the checkout.
    release === undefined
      ? "rel=()"
      : "name" in release
        ? `rel=(--release ${quote(release.name)})`
        : `rel=(--release "$(git rev-parse --short=7 ${quote(`${release.rev}^{commit}`)})")`,
    `rm -f ${d}/launcher.exit`,
    // `up` returns once the manager runs; its exit code tells readiness whether it gave up.
    `setsid bash -c 'scripts/dgpp-cluster up --config "$0" "\${@:3}" > "$1" 2>&1 < /dev/null; ` +
      `echo $? > "$2"' ${cfg} "$log" ${d}/launcher.exit "\${rel[@]}" > /dev/null 2>&1 < /dev/null &`,
    `echo $! > ${d}/launcher.pid`,
  ].join("\n");
  const stop = [
    `if [ -x ${dir}/scripts/dgpp-cluster ]; then (cd ${dir} && scripts/dgpp-cluster down --config ${cfg}); fi`,
    `if [ -f ${d}/launcher.pid ]; then kill "$(cat ${d}/launcher.pid)" 2>/dev/null || true; ` +
      `rm -f ${d}/launcher.pid; fi`,
  ].join("\n");
  // DGPP's manager owns its processes; "running" is its API answering on the head.
  const url = quote(`http://${api.host}:${api.port}/v1/models`);
  const status = [
    'running=false; started=""',
    `code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 ${url} 2>/dev/null || true)`,
    `case "$code" in 200|401) running=true; ${readStartedAt(spec.stateDir)};; esac`,
    STATUS_RECORD,
  ].join("\n");
  const shownRelease =
    release === undefined ? "" : "name" in release ? ` --release ${release.name}` : ` --release <short ${release.rev}>`;
  return {
    files: [],
    start,
    stop,
    status,
    logs: logsScript(`${d}/engine.log`),
    launch:
      `cd ${dgppDir} && nohup scripts/dgpp-cluster up --config ${configPath}${shownRelease}` +
      " > log/sm121-up-<UTC>.log 2>&1 &",
    statusAsksApi: true,
  };
}
