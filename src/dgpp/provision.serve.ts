/**
 * DGPP provisioning (seed 000): stage the cluster JSON and .env on every launch node, then build
 * and install the pinned release on rank 0 only (its install reaches the peers from DGPP_NODES),
 * skipped when the rev marker already says this rev.
 */
import { hostFor, withHosts, type Host, type SshAuth } from "../remote";
import type { DgppPaths } from "./files.render";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { nodePath, quote } from "../text/shell";
import { utcStamp } from "../serve/outcome";
import { writeScript } from "../serve/steps";
import { msg, SaidError, t } from "../text/messages";
import { firstRecord, printRecord, recordsOf } from "../protocol";

export interface ProvisionSettings {
  recipe: string;
  paths: DgppPaths;
  rev?: string;
  buildScript?: string;
  pollS: number;
  capS: number;
}

export interface ProvisionOutcome {
  /** The rev the marker says on rank 0 after the run (undefined: DGPP assumed pre-installed). */
  marker?: string;
  /** Staged files that replaced different ones, backed up first (node:path). */
  backups: string[];
}

function staged(nb: NodeBundle, dir: string): NodeBundle {
  return { ...nb, files: nb.files.filter((f) => f.path.startsWith(`${dir}/`)) };
}

export async function provisionDgpp(
  b: DeploymentBundle,
  s: ProvisionSettings,
  auth: SshAuth,
  log: (m: string) => void,
): Promise<ProvisionOutcome> {
  return withHosts(
    b.nodes,
    auth,
    async (hosts) => {
      const out: ProvisionOutcome = { backups: [] };
      const head = b.nodes[0];
      if (head === undefined) throw new SaidError(msg("copy.noNodes", { deployment: b.deployment }));
      const paths = s.paths;
      // 1. Stage first, on every launch node: install validates DGPP_NODES per node.
      const stamp = utcStamp();
      await Promise.all(
        b.nodes.map(async (nb) => {
          const res = await hostFor(hosts, nb.node).run(
            writeScript(staged(nb, paths.dir), { stamp, renderedAt: stamp, secrets: {} }),
            { step: "stage DGPP config" },
          );
          const backups = recordsOf(res.records, "written").flatMap((r) => (r.backup === null ? [] : [r.backup]));
          out.backups.push(...backups.map((b) => `${nb.node}:${b}`));
        }),
      );
      if (s.rev === undefined || s.buildScript === undefined) return out;
      // 2. Provision on rank 0 only, skipped when the marker says this rev.
      const h = hostFor(hosts, head.node);
      const marker = (
        await h.run(`cat ${nodePath(paths.marker)} 2>/dev/null || true`, { step: "read the DGPP rev marker" })
      ).stdout.trim();
      if (marker === s.rev) {
        log(t("serve.dgppInstalled", { rev: s.rev, node: head.node, marker: paths.marker }));
        return { ...out, marker };
      }
      log(
        t("serve.dgppBuilding", {
          rev: s.rev,
          node: head.node,
          session: paths.session,
          cap: s.capS,
          log: paths.buildLog,
        }),
      );
      await h.run(startBuild(paths, s.buildScript), { step: "start the DGPP build" });
      await waitBuild(h, paths, s, log);
      return { ...out, marker: s.rev };
    },
    { lock: true, log },
  );
}

/**
 * The build script goes to a file and runs as `bash <file> 2>&1 | tee -a <log>` in a detached
 * session. The log's directory is the deployment's own, made 0700, so no one else can put a
 * symlink at the log's name; a symlink or anything else found there is removed, not followed, and
 * the log is made anew with noclobber (which refuses to write through a link that appears anyway).
 */
export function startBuild(p: DgppPaths, script: string): string {
  const b64 = Buffer.from(script).toString("base64");
  const file = nodePath(p.buildScript);
  const session = quote(p.session);
  return [
    "set -e",
    `mkdir -p ${nodePath(p.dir)}`,
    `printf '%s' ${quote(b64)} | base64 -d > ${file}`,
    `tmux kill-session -t ${session} 2>/dev/null || true`,
    `log=${nodePath(p.buildLog)}`,
    'mkdir -p "$(dirname "$log")"',
    'chmod 0700 "$(dirname "$log")"',
    'rm -f "$log"',
    '(set -C; : > "$log")',
    `tmux new-session -d -s ${session} "bash $(printf %q ${file}) 2>&1 | tee -a $(printf %q "$log")"`,
  ].join("\n");
}

/**
 * One poll of the build: done (its log has the end marker), running (its session is there) or
 * failed, with the log's last line. A build that ends between the two questions has its marker in
 * the log by the time its session is gone (the session ends when `tee` has written the last
 * line): the log is read once more before the build counts as failed.
 */
export function buildPollScript(p: DgppPaths): string {
  const log = nodePath(p.buildLog);
  const lastLine = `"$(tail -n 1 ${log} 2>/dev/null | cut -c1-200 | base64 -w0)"`;
  const build = (state: "done" | "running" | "failed") =>
    printRecord("dgppBuild", `"state":"${state}","last64":"%s"`, lastLine);
  const done = `grep -q '^SM121-DGPP-DONE$' ${log} 2>/dev/null`;
  return [
    `if ${done}; then ${build("done")};`,
    `elif tmux has-session -t ${quote(p.session)} 2>/dev/null; then ${build("running")};`,
    `elif ${done}; then ${build("done")};`,
    `else ${build("failed")}; fi`,
  ].join(" ");
}

async function waitBuild(h: Host, p: DgppPaths, s: ProvisionSettings, log: (m: string) => void): Promise<void> {
  const started = Date.now();
  const check = buildPollScript(p);
  // Progress every 10 s or so: how long, and the build log's last line when it changed.
  let said = started;
  let seen = "";
  for (;;) {
    const polled = firstRecord((await h.run(check, { step: "poll the DGPP build" })).records, "dgppBuild");
    const state = polled?.state;
    const last = Buffer.from(polled?.last64 ?? "", "base64")
      .toString("utf8")
      .trim();
    if (state === "running" && Date.now() - said >= 10_000) {
      said = Date.now();
      const waited = { node: h.node, seconds: Math.round((said - started) / 1000), cap: s.capS };
      log(
        last !== "" && last !== seen ? t("serve.dgppWaitingLog", { ...waited, last }) : t("serve.dgppWaiting", waited),
      );
      seen = last;
    }
    if (state === "done") {
      const notes = await h.run(
        `tmux kill-session -t ${quote(p.session)} 2>/dev/null || true; grep '^sm121: ' ${nodePath(p.buildLog)} || true`,
        { step: "end the DGPP build session" },
      );
      for (const line of notes.stdout.split("\n").filter((l) => l !== "")) log(line.replace(/^sm121: /, ""));
      log(t("serve.dgppDone", { seconds: Math.round((Date.now() - started) / 1000) }));
      return;
    }
    if (state === "failed") {
      const tail = (
        await h.run(`tail -n 20 ${nodePath(p.buildLog)} 2>/dev/null || true`, { step: "read the DGPP build log" })
      ).stdout;
      const failed = msg("serve.dgppFailed", { rev: s.rev ?? "", node: h.node, log: p.buildLog });
      throw new SaidError(msg("serve.withTail", { said: failed, tail }));
    }
    if (Date.now() - started > s.capS * 1000) {
      const minutes = Math.round(s.capS / 60);
      throw new SaidError(
        msg("serve.dgppTooLong", { rev: s.rev ?? "", node: h.node, minutes, session: p.session, log: p.buildLog }),
      );
    }
    await new Promise((r) => setTimeout(r, s.pollS * 1000));
  }
}
