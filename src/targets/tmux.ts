/** deploy = "tmux": one tmux session per deployment and node, sm121-<deployment>-<rank>. */
import { runArgvLine, runShTarget, waitGone } from "./common";
import { nodePath, quote } from "../text/shell";
import type { LaunchSpec, TargetScripts } from "./types";

export function sessionName(spec: LaunchSpec): string {
  return `sm121-${spec.deployment}-${spec.rank}`;
}

export function tmuxTarget(spec: LaunchSpec): TargetScripts {
  const s = quote(sessionName(spec));
  const d = nodePath(spec.stateDir);
  const has = `tmux has-session -t ${s} 2>/dev/null`;
  const start = [
    `tmux kill-session -t ${s} 2>/dev/null || true`,
    `mkdir -p ${d}/logs`,
    `tmux new-session -d -s ${s} -x 200 -y 50 "exec bash $(printf %q ${d}/run.sh)"`,
    `tmux display-message -p -t ${s} '#{pane_pid}' > ${d}/pid`,
  ].join("\n");
  // SIGTERM to the engine's own process (the pane's: run.sh execs it), as docker stop and systemd do: vLLM
  // then refuses new requests and lets its engine core finish what runs (--shutdown-timeout). C-c in the pane
  // would reach the whole foreground group, the engine core too, and cut the streams in flight. Then the session.
  const stop = [
    `if ${has}; then`,
    `  pid=$(tmux display-message -p -t ${s} '#{pane_pid}' 2>/dev/null || true)`,
    // An engine stopped by a signal (SIGSTOP, Ctrl-Z in the pane) takes no SIGTERM until it continues.
    `  if [ -n "$pid" ]; then kill -CONT -- "-$pid" 2>/dev/null || true; kill -TERM "$pid" 2>/dev/null || true; fi`,
    `  for _ in $(seq 1 100); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done`,
    `  tmux kill-session -t ${s} 2>/dev/null || true`,
    "fi",
    waitGone(has, 10, `tmux session ${sessionName(spec)}`),
    `rm -f ${d}/pid`,
  ].join("\n");
  return runShTarget(spec, has, "tmux session gone", {
    start,
    stop,
    launch:
      `tmux new-session -d -s ${sessionName(spec)} 'bash ${spec.stateDir}/run.sh'` +
      `  # run.sh: exec ${runArgvLine(spec)}`,
  });
}
