/**
 * Every script `pulumi up` runs on a node, by step: what serve runs and what `sm121 render`
 * prints, from one place. A node that runs no engine process gets `:` as its start, and a node
 * without an API is checked through its status script instead of /v1/models.
 */
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { t } from "../text/messages";
import { shellValue, shellWords } from "../text/shell";
import { envPathOf, watchedPaths } from "./probe";
import { readinessScript, verifyScript } from "./readiness";
import { phaseLinesScript } from "./phases";
import { displaceScript, hookLines, registerScript, stopWithHooks } from "./registry";
import { memGateScript, mkdirScript, preflightScript, writeScript, type WriteOptions } from "./steps";

export const STEPS = ["preflight", "stop", "memory-gate", "write", "start", "readiness", "verify"] as const;
export type Step = (typeof STEPS)[number];

export function isStep(name: string): name is Step {
  return (STEPS as readonly string[]).includes(name);
}

const lines = (...parts: string[]) => parts.filter((p) => p !== "" && p !== ":").join("\n") || ":";

/**
 * A wait that lasts says so: a line every 10 s while `script` runs (the target's own stop and its
 * verify-gone wait stay as rendered, so the bundle identity does not depend on how sm121 reports).
 * The watcher waits with bash's own `read -t` on a pipe the script's shell holds, so it starts no
 * process of its own (a `sleep` it started outlived it by up to 10 s when it was killed): closing
 * the pipe after the script, whatever its outcome, ends it at once, and the step waits for it.
 */
function withProgress(what: string, script: string): string {
  if (script === ":") return script;
  const soFar = shellWords(t("serve.soFar", { what, seconds: shellValue("$s") }));
  return [
    `exec {progress}> >(s=0; while read -r -t 10 _; [ $? -gt 128 ]; do s=$((s + 10)); echo ${soFar}; done)`,
    "watcher=$!",
    "set +e",
    `( ${script}
) {progress}>&-`,
    "rc=$?",
    "set -e",
    'exec {progress}>&-; wait "$watcher" 2>/dev/null || true',
    '[ "$rc" -eq 0 ] || exit "$rc"',
  ].join("\n");
}

export function stepScripts(b: DeploymentBundle, nb: NodeBundle, w: WriteOptions): Record<Step, string> {
  return {
    preflight: preflightScript(nb, watchedPaths(nb), envPathOf(nb)),
    // Whatever other deployment the node still runs stops first (a node move), then this one.
    stop: lines(
      mkdirScript(nb),
      withProgress(t("serve.stoppingWatch"), lines(displaceScript(nb, w.owner), stopWithHooks(nb, b.hooks.afterStop))),
    ),
    "memory-gate": memGateScript(nb.memGateGiB, b.memTimeoutS),
    write: lines(writeScript(nb, w), registerScript(nb, b.hooks.afterStop, w.owner)),
    // before_serve runs before every start of the engine on the node (seed 000: gr8's sysctl).
    start: lines(hookLines("before_serve", b.hooks.beforeServe), nb.runs ? nb.start : ":"),
    readiness: nb.api === undefined ? nb.status : readinessScript(nb, b.readiness),
    // After a start, the engine log's lines of where its start went too (serve/phases).
    verify: nb.api === undefined ? ":" : lines(verifyScript(nb, b.readiness, phaseLinesScript(b.engine)), nb.status),
  };
}
