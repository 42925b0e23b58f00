/**
 * The node-side scripts of the serve sequence (seed 001 "What up does"), built from a rendered
 * bundle. Each phase is one script, so a node costs one round trip per phase.
 */
import type { NodeBundle, PreflightCheck } from "../render/types";
import { t } from "../text/messages";
import { joinNode, lastErrorLine, nodePath, NOW_S, nowMs, quote, shellValue, shellWords } from "../text/shell";
import { EXIT } from "./failure";
import { fillRenderedAt } from "../render/envfile";
import { launchIdentityOf } from "../render/launch";
import { manifestScript } from "./hfcache";
import { modelFactsScript } from "./modelprobe";
import type { Owner } from "./owner";
import { deploymentOf, deploymentsDir, othersProbe } from "./registry";
import { printRecord, recordJson } from "../protocol";
import { backupCare, DEFAULT_KEEP_BACKUPS, envSecretLines, ENV_SECRET_KEYS } from "./secretfiles";
import { secretsEnvScript } from "../targets/secretsenv";
import { containerStatus } from "../targets/common";
import { envFileOf } from "../render/node";
import { lifeScript } from "./nodelife";

/**
 * Sets `sum` to the sha256 of a file on the node (empty when it cannot be read): one process, as
 * bash runs a command substitution of one simple command without redirections in the subshell
 * itself. sha256sum puts a backslash first when it escapes the file's name.
 */
function sha256Into(file: string): string {
  return (
    `if [ -r ${file} ]; then sum=$(sha256sum -- ${file}) || sum=; ` + "sum=${sum#\\\\}; sum=${sum:0:64}; else sum=; fi"
  );
}

/**
 * The HF-cache check: the repo dir's listing (serve/hfcache's manifest, which the model cache reads
 * too) as one record; serve/probe matches the snapshot against its index there.
 */
function hfCacheLine(c: PreflightCheck): string {
  const check = JSON.stringify({ check: c.kind, subject: c.subject, why: c.why, fatal: c.fatal, model: c.model });
  return [
    `hl=$( ( ${manifestScript(c.subject)} ) 2>/dev/null | base64 -w0 ) || hl=`,
    printRecord("hfCache", '"check":%s,"listing64":"%s"', `${quote(check)} "$hl"`),
  ].join("\n");
}

function checkLine(c: PreflightCheck): string {
  if (c.kind === "hf-cache" && c.model !== undefined) return hfCacheLine(c);
  const s =
    c.kind === "image" || c.kind === "command" || c.kind === "port-free" || c.kind === "roce"
      ? quote(c.subject)
      : nodePath(c.subject);
  const test: Record<PreflightCheck["kind"], string> = {
    dir: `[ -d ${s} ]`,
    file: `[ -e ${s} ]`,
    "hf-cache": `[ -d ${s} ] && [ -n "$(ls -A ${s} 2>/dev/null)" ]`,
    // A docker that does not answer is not a missing image: the docker check below reports it.
    image: `docker image inspect ${s} >/dev/null 2>&1 || ! docker ps -q >/dev/null 2>&1`,
    command: `command -v ${s} >/dev/null 2>&1 || [ -x ${s} ]`,
    "port-free": `! (ss -Htln 2>/dev/null | awk '{print $4}' | grep -qE ':'${s}'$')`,
    // DGPP's transport takes at most two lanes: more RoCE devices need DGPP_ROCE_DEVICES.
    roce: `[ "$(rdma link show 2>/dev/null | awk '{print $2}' | cut -d/ -f1 | sort -u | wc -l)" -le 2 ]`,
  };
  const failed = recordJson("check", { check: c.kind, subject: c.subject, why: c.why, fatal: c.fatal });
  return `if ${test[c.kind]}; then :; else printf '%s\\n' ${quote(failed)}; fi`;
}

export interface ProbeOptions {
  /** Run the preflight checks (default); without them only the node's state is read (the plan-time look, status). */
  checks?: boolean;
  /** Run the target's status script (default). */
  runStatus?: boolean;
  /**
   * Count the open client connections on the API port (default): the serve warns of them before
   * a restart. The plan-time look and `sm121 status` leave them out: `ss` walks the kernel's
   * whole socket table.
   */
  clients?: boolean;
  /** A container's status from the node's one docker call of the plan-time look (targets/dockerlook). */
  looked?: boolean;
  /** Read the checkpoint's config and size from the hub on rank 0 where no HF cache has it (the look, doctor). */
  hub?: boolean;
}

/**
 * Preflight (read-only) and the node's current state: the checks that fail, the status of the
 * engine, sm121's record of what it wrote, the sha256 and change time of every watched file, the
 * open client connections, and the current .env text for the plan's key diff.
 */
export function preflightScript(
  nb: NodeBundle,
  watch: string[],
  envPath: string | undefined,
  o: ProbeOptions = {},
): string {
  const d = nodePath(nb.stateDir);
  const checks = o.checks ?? true;
  const lines = [
    // Without the preflight, the checks every plan makes (what the engine refuses at start).
    ...(checks
      ? [...nb.preflight.map(checkLine), otherVllmProbe(nb)]
      : nb.preflight.filter((c) => c.atPlan === true).map(checkLine)),
    // Builtins where a fork would do the same: the look runs on every node at every plan.
    `state=; if [ -f ${d}/state.json ]; then IFS= read -r state < ${d}/state.json || true; fi; ` +
      '[ -n "$state" ] || state=null',
    othersProbe(deploymentsDir(nb), deploymentOf(nb)),
    printRecord("state", '"state":%s', '"$state"'),
    // A stop that failed here (serve/stop.ts) left its record: the look reports it until a stop succeeds.
    `if [ -f ${d}/stop-failed.json ]; then IFS= read -r sf < ${d}/stop-failed.json || true; ` +
      `[ -z "$sf" ] || ${printRecord("stopFailed", '"stopFailed":%s', '"$sf"')}; fi`,
    // `sm121 status` leaves out a status script that would ask a protected node's API.
    (o.runStatus ?? true) ? statusScript(nb, o.looked === true) : ":",
    modelFactsScript(nb, o.hub === true && nb.rank === 0),
    lifeScript(nb),
    watchedFilesScript(watch),
  ];
  const port = (o.clients ?? true) ? nb.api?.port : undefined;
  if (port !== undefined) {
    lines.push(
      `mapfile -t conns < <(ss -Htn state established "( sport = :${port} )" 2>/dev/null); conns=\${#conns[@]}`,
    );
    lines.push(printRecord("clients", '"clients":%d', '"$conns"'));
  }
  if (envPath !== undefined) {
    const plain = `grep -vE '^(export )?(${ENV_SECRET_KEYS.join("|")})=' ${nodePath(envPath)} || true`;
    const text = printRecord("envText", '"text64":"%s"', `"$( { ${plain}; } | base64 -w0)"`);
    lines.push(`if [ -f ${nodePath(envPath)} ]; then ${text}; fi`);
  }
  return lines.join("\n");
}

/**
 * The sha256 and change time of each watched file that exists, from one `stat` and one `sha256sum`
 * for all of them (no redirection: see sha256Into): the look runs on every node at every plan. A
 * directory (a mount source) has no sha256; a file the batch missed (one that changed under it, or
 * whose name the tools print escaped) is read on its own.
 */
function watchedFilesScript(watch: string[]): string {
  if (watch.length === 0) return ":";
  const names = watch.map((p) => quote(JSON.stringify(p).slice(1, -1)));
  return [
    `wf=(${watch.map(nodePath).join(" ")}); wn=(${names.join(" ")}); we=(); wr=(); declare -A wc=() ws=()`,
    'for f in "${wf[@]}"; do [ -e "$f" ] || continue; we+=("$f"); ' +
      'if [ -f "$f" ] && [ -r "$f" ]; then wr+=("$f"); fi; done',
    'if [ ${#we[@]} -gt 0 ]; then out=$(stat -c "%Z %n" -- "${we[@]}") || true; ' +
      'while IFS= read -r l; do k=${l#* }; [ -z "$k" ] || wc["$k"]=${l%% *}; done <<< "$out"; fi',
    // sha256sum prints "<64 hex>  <name>", with a leading backslash when it escapes the name.
    'if [ ${#wr[@]} -gt 0 ]; then out=$(sha256sum -- "${wr[@]}") || true; ' +
      'while IFS= read -r l; do k=${l:66}; [ "${l:0:1}" = "\\\\" ] || [ -z "$k" ] || ws["$k"]=${l:0:64}; ' +
      'done <<< "$out"; fi',
    'for i in "${!wf[@]}"; do',
    '  f=${wf[i]}; c=${wc["$f"]-}; sum=${ws["$f"]-}',
    '  if [ -z "$c" ] && [ -e "$f" ]; then c=$(stat -c %Z -- "$f") || c=; fi',
    '  [ -n "$c" ] || continue',
    `  if [ -z "$sum" ] && [ -f "$f" ]; then ${sha256Into('"$f"')}; fi`,
    `  ${printRecord("watched", '"file":"%s","sha256":"%s","ctime":%s', '"${wn[i]}" "$sum" "$c"')}`,
    "done",
  ].join("\n");
}

/**
 * The engine's status for the look: a container's comes with its bind mounts from the same
 * `docker inspect` (seed 001's newer-mount rule over every bind mount of the running container,
 * as the container itself has them, so that the files a script recipe's start.sh mounts count as
 * well as those sm121 renders). Another target's is the bundle's own status script.
 */
function statusScript(nb: NodeBundle, looked: boolean): string {
  if (nb.containerName === undefined) return `( ${nb.status} ) || true`;
  const image = nb.image === undefined ? {} : { image: nb.image };
  return `( ${containerStatus(nb.containerName, looked ? { looked, ...image } : { mounts: true, ...image })} ) || true`;
}

/**
 * Seed 001: no other vLLM container runs on the node. A container of this deployment (labelled,
 * or named in its stop) or of another deployment sm121 holds here (a node move: its stored stop
 * runs first) is no failure; any other running container whose command is a vLLM server is.
 */
const PS_FORMAT = quote('{{.Names}}|{{.Label "sm121.deployment"}}|{{.Command}}');

function otherVllmProbe(nb: NodeBundle): string {
  const root = nodePath(deploymentsDir(nb));
  const own = quote(deploymentOf(nb));
  const why =
    "a vLLM server that is not of this deployment would hold the GPU memory and maybe the port; " +
    "stop it on the node (docker stop <name>) or serve on another node";
  const whyArg = quote(JSON.stringify(why));
  return [
    "if command -v docker >/dev/null 2>&1; then",
    `  known=$( { printf '%s' ${quote(Buffer.from(nb.stop).toString("base64"))} | base64 -d; ` +
      `cat ${root}/*/stop.sh 2>/dev/null; } || true)`,
    // "|" parts the fields: neither a name nor a label value holds one, and an empty label stays a field.
    `  if ps=$(docker ps --no-trunc --format ${PS_FORMAT} 2>/dev/null); then`,
    `    printf '%s\\n' "$ps" | while IFS='|' read -r name dep cmd; do`,
    `      if [ -n "$dep" ] && { [ "$dep" = ${own} ] || [ -d ${root}/"$dep" ]; }; then continue; fi`,
    "      case \"$cmd\" in *'vllm serve'*|*vllm.entrypoints.openai*) ;; *) continue;; esac",
    '      if printf \'%s\\n\' "$known" | grep -qwF -- "$name"; then continue; fi',
    `      ${printRecord(
      "check",
      '"check":"vllm-container","subject":"%s","why":%s,"fatal":true',
      `"$name" ${whyArg}`,
    )}`,
    "    done",
    // The daemon does not answer (stopped, restarting, a socket the user may not use): whether
    // another vLLM runs is unknown, and docker's own error says why.
    "  else",
    `    err=${lastErrorLine("docker ps -q")}`,
    `    ${printRecord(
      "check",
      '"check":"docker","subject":"docker","why":"docker does not answer: %s","fatal":true',
      '"$err"',
    )}`,
    "  fi",
    "fi",
  ].join("\n");
}

export function mkdirScript(nb: NodeBundle): string {
  return nb.mkdirs.map((m) => `mkdir -p ${nodePath(m)}`).join("\n") || ":";
}

/** Waits until MemAvailable reaches the gate; a line with the timeout first, then progress every 10 s. */
export function memGateScript(gateGiB: number, timeoutS: number): string {
  const gateKb = Math.round(gateGiB * 1024 * 1024);
  const gate = { seconds: timeoutS, gate: gateGiB, now: shellValue("$((avail / 1048576))") };
  const first = shellWords(t("serve.memWaitUpTo", gate));
  const below = shellWords(`sm121: ${t("serve.memBelowGate", gate)}`);
  const waiting = shellWords(t("serve.memWaiting", { ...gate, waited: shellValue("$((now - t0))") }));
  return [
    `t0=${NOW_S}; deadline=$((t0 + ${timeoutS})); last=$t0; said=false`,
    "while :; do",
    "  avail=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo)",
    `  if [ "$avail" -ge ${gateKb} ]; then break; fi`,
    `  if [ "$said" = false ]; then echo ${first}; said=true; fi`,
    `  now=${NOW_S}`,
    `  if [ "$now" -ge "$deadline" ]; then echo ${below} >&2; exit ${EXIT.memoryGate}; fi`,
    `  if [ $((now - last)) -ge 10 ]; then echo ${waiting}; last=$now; fi`,
    "  sleep 1",
    "done",
    printRecord("memGate", '"memAvailableKiB":%d', '"$avail"'),
  ].join("\n");
}

/**
 * Runs `script` and then prints how long it took, as a `took` record (step, ms): the
 * per-step timings of an up come from the node's own clock. A script that fails prints none.
 */
export function timed(step: string, script: string): string {
  if (script === ":" || script === "") return script;
  const took = printRecord("took", '"step":"%s","ms":%d', `${quote(step)} $((sm121_t1 - sm121_t0))`);
  return [nowMs("sm121_t0"), script, `${nowMs("sm121_t1")}; ${took}`].join("\n");
}

export interface WriteOptions {
  /** UTC time for backups and the rendered-at slot, e.g. 20261129T153800Z. */
  stamp: string;
  renderedAt: string;
  /** Secrets set through Pulumi; written to the node, never printed. */
  secrets: Record<string, string>;
  /** Backups kept per file (sm121:keepBackups); default DEFAULT_KEEP_BACKUPS. */
  keepBackups?: number;
  /** The stack this run serves for: recorded in the deployment's marker on the node. */
  owner?: Owner;
}

/**
 * Writes the files that differ, each after a backup of the old one (`<file>.sm121-bak-<UTC>`),
 * through a temp file and a rename. HF_TOKEN and API_KEY lines of an old .env are carried over
 * (a Pulumi secret of the same name wins); the backups are kept and rewritten as ./secretfiles
 * says. Secrets reach the node on stdin only.
 */
export function writeScript(nb: NodeBundle, o: WriteOptions): string {
  const d = nodePath(nb.stateDir);
  const lines = [`mkdir -p ${d}`, "umask 077"];
  const envFile = envFileOf(nb);
  for (const f of nb.files) {
    const p = nodePath(f.path);
    const isEnv = f === envFile;
    const content = isEnv ? fillRenderedAt(f.content, o.renderedAt) : f.content;
    const b64 = Buffer.from(content).toString("base64");
    lines.push(
      `f=${p}; mkdir -p "$(dirname "$f")"; tmp="$f.sm121-tmp"`,
      `printf '%s' ${quote(b64)} | base64 -d > "$tmp"`,
    );
    if (isEnv) lines.push(...envSecretLines(o.secrets));
    lines.push(`chmod ${f.mode.toString(8)} "$tmp"`);
    // The .env compares without its rendered-at line: a new stamp alone is no new file.
    const same = isEnv
      ? `cmp -s <(grep -v '^# sm121-rendered: ' "$f") <(grep -v '^# sm121-rendered: ' "$tmp")`
      : 'cmp -s "$f" "$tmp"';
    const backup = f.backup ? `bak="$f.sm121-bak-${o.stamp}"; cp -p "$f" "$bak"; ` : "";
    lines.push(
      'bak=""',
      `if [ -f "$f" ] && ! ${same}; then ${backup}mv "$tmp" "$f"; written=true; ` +
        'elif [ -f "$f" ]; then rm -f "$tmp"; written=false; else mv "$tmp" "$f"; written=true; fi',
      ...(f.backup ? [backupCare(isEnv ? o.secrets : {}, o.keepBackups ?? DEFAULT_KEEP_BACKUPS)] : []),
      sha256Into('"$f"'),
      'if [ -n "$bak" ]; then bak="\\"$bak\\""; else bak=null; fi',
      printRecord(
        "written",
        '"file":%s,"written":%s,"backup":%s,"sha256":"%s"',
        `${quote(JSON.stringify(f.path))} "$written" "$bak" "$sum"`,
      ),
    );
  }
  lines.push(secretsEnvScript(nb.stateDir, o.secrets));
  return lines.join("\n");
}

/**
 * Records what was written, so that refresh can tell a hand edit from our own render, and what the
 * engine was started with (render/launch), so that a later bundle with the same launch checks it
 * instead of restarting it.
 */
export function stateScript(nb: NodeBundle, identity: string, written: Record<string, string>): string {
  const launch = launchIdentityOf(nb);
  const state = JSON.stringify({ identity, launch, deployment: nb.stateDir.split("/").pop(), files: written });
  return `printf '%s\\n' ${quote(state)} > ${nodePath(joinNode(nb.stateDir, "state.json"))}`;
}
