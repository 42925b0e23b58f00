/**
 * Liveness without a request (seed 001: a protected node gets no HTTP request without the
 * allowance, SM121_ALLOW_PROTECTED): what the node shows of the engine by itself. The engine's
 * process and its children as the kernel has them (/proc/<pid>/stat: a process stopped by a signal
 * or a debugger, `T`/`t`, or one that is dead and unreaped, `Z`, serves nothing), and how long ago
 * its log was last written (its progress: a serving engine logs what it does). The plan says the
 * check was passive and what it saw; only a stopped or dead process is a hang here.
 *
 * The engine's process: a container's main process from the look's one docker call
 * (targets/dockerlook `$cpid`, `$clog`), the pid file of a tmux or native engine. DGPP's manager
 * keeps its own processes: it gets no passive check.
 */
import type { NodeBundle } from "../render/types";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";
import { msg, type Msg } from "../text/messages";
import { nodePath } from "../text/shell";
import type { LiveCheck } from "./liveness";
import { lookedContainer } from "../targets/dockerlook";

/** Process states that serve nothing: stopped (by a signal, by a tracer), dead. */
const STOPPED = /[TtZX]/;

/**
 * The passive check's record, from a part of the look (after the engine's status, which sets
 * `$cpid` for a container).
 */
export function passiveScript(nb: NodeBundle): string {
  const d = nodePath(nb.stateDir);
  const fromFile = nb.containerName === undefined;
  if (fromFile && nb.statusAsksApi) return ":";
  // A container's: its lines of the look's one docker call (the status above ran in a subshell).
  const pid = fromFile
    ? `pp=; if [ -f ${d}/pid ]; then read -r pp < ${d}/pid || pp=; fi`
    : `${lookedContainer(nb.containerName ?? "")}\npp=\${cpid:-}`;
  const log = fromFile ? `lf=${d}/logs/engine.log` : "lf=${clog:-}";
  return [
    pid,
    log,
    // The process and its direct children (vLLM's engine core, SGLang's scheduler), each one letter.
    'ps=; if [ -n "$pp" ] && [ "$pp" != 0 ]; then for p in $pp; do',
    '  ch=; read -r ch < /proc/"$p"/task/"$p"/children 2>/dev/null || true',
    '  for q in "$p" $ch; do s=; read -r s < /proc/"$q"/stat 2>/dev/null || continue; s=${s##*) }; ps+=${s:0:1}; done',
    "done; fi",
    'la=null; if [ -n "$lf" ] && m=$(stat -L -c %Y -- "$lf" 2>/dev/null); then ' +
      "la=$(( ${EPOCHSECONDS:-$(date +%s)} - m )); fi",
    printRecord("passive", '"states":"%s","logAgeS":%s', '"${ps//[^A-Za-z]/}" "$la"'),
  ].join("\n");
}

/** The verdict of a passive check: hung where the engine's process or a child is stopped or dead. */
export function passiveOf(records: readonly NodeRecord[], timeoutS: number): LiveCheck | undefined {
  const r = firstRecord(records, "passive");
  if (r === undefined) return undefined;
  const passive = { states: r.states, logAgeS: r.logAgeS };
  const verdict = STOPPED.test(r.states) ? "hung" : "passive";
  return { verdict, timeoutS, modelsCode: 0, passive };
}

/** What a passive check saw on `node`, said in the plan: it was passive, and why a protected node gets no request. */
export function passiveWords(node: string, l: LiveCheck): Msg {
  const p = l.passive;
  const states = p === undefined || p.states === "" ? msg("keep.passive.noProcess") : p.states.split("").join(" ");
  const log =
    p?.logAgeS === null || p?.logAgeS === undefined
      ? msg("keep.passive.noLog")
      : msg("keep.passive.log", { s: p.logAgeS });
  const key = l.verdict === "hung" ? "keep.passive.stopped" : "keep.passive.ok";
  return msg(key, { node, states, log });
}
