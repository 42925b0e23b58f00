/**
 * `sm121 keep [--once] [--interval S] [--log FILE] [--unit]`: keeps one stack serving between
 * runs, on any always-on machine that holds the stack's backend and passphrase (or a Spark).
 *
 * Every interval (default 60 s) it takes the plan-time look, read-only, as a preview does
 * (serve/observe), and decides per deployment (./keepdecide): a dead or hung engine, or one down
 * after a reboot or the memory tripwire, is repaired by an up of that deployment alone through
 * Pulumi's Automation API (`--target` its engine resource), holding the stack's lock like any up,
 * one deployment at a time; the up stops a multi-node group on every rank and starts it again.
 * A change nobody applied and a protected node without SM121_ALLOW_PROTECTED are left, and said.
 * Two keepers on one stack: Pulumi's lock serialises them, and the second says so (or, when its
 * up comes after the first's, that the up found the deployment serving and changed nothing).
 *
 * Every action is one JSON line in the log (default ~/.sm121/keep/<stack>.jsonl) and a line on
 * stdout. A repair's outcome is also kept beside the deployment's state on its first node
 * (keeper.json: what, when, why, how long until serving), which `sm121 status` says; when it gives
 * up it writes keeper-gave-up.json there too: the plan says so until an up serves it again.
 */
import { appendFileSync, mkdirSync, writeFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { z } from "zod";
import type { Site } from "../recipe/types";
import { Dialer } from "../remote";
import { nodeConn } from "../render/node";
import type { DeploymentBundle } from "../render/types";
import { LIFE_FILES, type KeeperAction, type KeeperRecord } from "../serve/nodelife";
import { observeSite, type SiteObservation } from "../serve/observe";
import { msg, say, t, type Msg } from "../text/messages";
import { allowedProtected } from "../text/protected";
import { nodePath, quote } from "../text/shell";
import { bool, num, str, UsageError, type Parsed } from "./args";
import { stackSetup } from "./backend";
import { cliAuth } from "./connect";
import { contextProject, type CliContext } from "./context";
import { failed, keepVerdict, memoryOf, repaired, sinceServed, type KeepMemory, type KeepVerdict } from "./keepdecide";

type Auto = typeof import("@pulumi/pulumi/automation");
type Stack = import("@pulumi/pulumi/automation").Stack;

interface KeepLine {
  at: string;
  deployment: string;
  action: "repaired" | "already" | "failed" | "gave-up" | "left" | "waits" | "locked" | "unknown";
  why: string[];
  servingAfterS?: number;
  error?: string;
}

const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, "Z");

/** The CLI's environment as the Automation API takes it: defined values only. */
function defined(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined));
}

/** The systemd user unit that runs this keeper, written to ~/.config/systemd/user. */
function writeUnit(ctx: CliContext, intervalS: number): string {
  const file = join(homedir(), ".config", "systemd", "user", `sm121-keep-${ctx.stack}.service`);
  const bin = resolve(__dirname, "..", "..", "..", "bin", "sm121");
  const exec = [process.execPath, bin, "keep", "--stack", ctx.stack, "--interval", String(intervalS)];
  const unit = [
    "[Unit]",
    `Description=sm121 keep: keeps stack ${ctx.stack} serving between runs`,
    "After=network-online.target",
    "",
    "[Service]",
    `WorkingDirectory=${ctx.root}`,
    `ExecStart=${exec.map((a) => (/\s/.test(a) ? `"${a}"` : a)).join(" ")}`,
    "Restart=on-failure",
    "RestartSec=30",
    "",
    "[Install]",
    "WantedBy=default.target",
    "",
  ].join("\n");
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, unit, { mode: 0o644 });
  return file;
}

/** The stack through the Automation API, as sm121's stack verbs open it (none is made here). */
async function openStack(ctx: CliContext): Promise<{ auto: Auto; stack: Stack }> {
  const setup = stackSetup(ctx.root, process.env);
  const auto = await import("@pulumi/pulumi/automation");
  const ws = await auto.LocalWorkspace.create({ workDir: ctx.root, envVars: defined(setup.env) });
  return { auto, stack: await auto.Stack.select(ctx.stack, ws) };
}

/** What the keeper reads of the stack's state: each resource's URN and an engine's outcome. */
const STATE = z.object({
  resources: z
    .array(
      z.object({
        urn: z.string(),
        outputs: z
          .object({ outcome: z.object({ status: z.string(), held: z.boolean().optional() }).optional() })
          .optional(),
      }),
    )
    .optional(),
});

/** The deployment's engine resource in the stack's state, if it has one. */
async function engineOf(stack: Stack, deployment: string) {
  const state = STATE.parse((await stack.exportStack()).deployment);
  return (state.resources ?? []).find((r) => r.urn.endsWith(`::${deployment}-engine`));
}

/**
 * The error Pulumi printed for the resource (its diagnostics' last `error:` line other than the
 * stack's "update failed"), else its last line that says an error, else its last line.
 */
function pulumiError(output: string): string {
  const lines = output
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "")
    .reverse();
  const own = lines.find((l) => l.startsWith("error: ") && l !== "error: update failed");
  return own?.slice("error: ".length) ?? lines.find((l) => /error/i.test(l)) ?? lines[0] ?? "";
}

/**
 * What the keeper did, beside the deployment's state on its first node (serve/nodelife):
 * keeper.json (its last action and the failures in its window), and keeper-gave-up.json when it
 * gives up. The plan and `sm121 status` say them; a node that cannot be reached keeps the old ones.
 */
async function recordOnNode(site: Site, b: DeploymentBundle, dial: Dialer, files: Record<string, object>) {
  const nb = b.nodes[0];
  const node = nb === undefined ? undefined : site.nodes[nb.node];
  if (nb === undefined || node === undefined) return;
  try {
    const h = await dial.host(nb.node, nodeConn(node));
    const d = nodePath(nb.stateDir);
    const write = ([file, record]: [string, object]) =>
      `printf '%s\\n' ${quote(JSON.stringify(record))} > ${d}/${file}.tmp && mv ${d}/${file}.tmp ${d}/${file}`;
    await h.run([`mkdir -p ${d}`, ...Object.entries(files).map(write)].join("\n"), { step: "keep", timeoutMs: 30_000 });
  } catch {
    // The JSON log has the action; the next pass writes the node's record again.
  }
}

/** keeper.json's content after an action on a deployment. */
function keeperRecord(m: KeepMemory, last: KeeperAction): KeeperRecord {
  const cause = m.lastError ?? msg("keep.upFailed", { error: "" });
  return { failures: m.failures.map((at) => ({ at: iso(at), cause })), last };
}

/**
 * One up of deployment `d` alone: "repaired" when it changed the engine and left it serving,
 * "already" when it found it serving (another up served it after this pass's look), "held" when
 * the up left it alone for sm121:liveness (restarted maxRestarts times in its window), "locked"
 * when another up holds the stack, else why it failed.
 */
type Repair = { kind: "repaired" | "already" | "held" | "locked" } | { kind: "failed"; error: Msg };

async function repair(ctx: CliContext, d: string): Promise<Repair> {
  const { auto, stack } = await openStack(ctx);
  const urn = (await engineOf(stack, d))?.urn;
  if (urn === undefined) return { kind: "failed", error: msg("keep.noResource", { deployment: d }) };
  let output = "";
  const collect = (s: string) => void (output += s);
  try {
    const up = await stack.up({ target: [urn], onOutput: collect, onError: collect, color: "never" });
    const outcome = (await engineOf(stack, d))?.outputs?.outcome;
    if (outcome?.held === true) return { kind: "held" };
    if (outcome !== undefined && outcome.status !== "serving")
      return { kind: "failed", error: msg("keep.upLeft", { status: outcome.status }) };
    const changes = Object.entries(up.summary.resourceChanges ?? {});
    return { kind: changes.some(([op, n]) => op !== "same" && (n ?? 0) > 0) ? "repaired" : "already" };
  } catch (e) {
    if (e instanceof auto.ConcurrentUpdateError) return { kind: "locked" };
    if (!(e instanceof auto.CommandError)) throw e;
    // An up that holds it now fails it, and its state says so.
    if ((await engineOf(stack, d))?.outputs?.outcome?.held === true) return { kind: "held" };
    return { kind: "failed", error: msg("keep.upFailed", { error: pulumiError(output || e.message) }) };
  }
}

interface Pass {
  ctx: CliContext;
  p: Parsed;
  memory: Map<string, KeepMemory>;
  log: (l: KeepLine) => void;
}

/**
 * One look, then each deployment's action in turn. Exit code: 0 when everything serves or was
 * repaired. The look's connections stay open for the records written after each action (one
 * connection per node in a pass; the repairs' ups make their own, in Pulumi's processes).
 */
async function pass(a: Pass): Promise<number> {
  const dial = new Dialer(cliAuth(contextProject(a.ctx).site, a.p, process.env, a.ctx.pulumi).auth);
  try {
    return await passWith(a, dial);
  } finally {
    dial.close();
  }
}

async function passWith({ ctx, memory, log }: Pass, dial: Dialer): Promise<number> {
  const project = contextProject(ctx);
  const site = project.site;
  const allowed = allowedProtected(process.env);
  const lookedAt = Date.now();
  const seen: SiteObservation = await observeSite(site.nodes, project.bundles, dial, {
    checks: false,
    livenessS: site.liveness.timeoutS,
    placeOf: (node) => `sm121:nodes.${node}.ssh`,
    allowProtected: allowed,
  });
  let code = 0;
  for (const b of project.bundles) {
    const d = b.deployment;
    const life = seen.life[d]?.[b.nodes[0]?.node ?? ""];
    const m = sinceServed(memory.get(d) ?? memoryOf(life?.keeper, site.keep, Date.now()), life?.readyAt);
    memory.set(d, m);
    const v: KeepVerdict = keepVerdict(b, seen, allowed, m, site.keep, Date.now());
    if (v.kind === "well") continue;
    const why = v.why.map((w) => say(w));
    const line = (action: KeepLine["action"], more: Partial<KeepLine> = {}) =>
      log({ at: iso(Date.now()), deployment: d, action, why, ...more });
    if (v.kind === "unknown") line("unknown");
    else if (v.kind === "left") line(v.reason === "gave-up" ? "gave-up" : "left");
    else if (v.kind === "wait") line("waits", { error: t("keep.waitsUntil", { at: iso(v.untilMs) }) });
    if (v.kind !== "repair") {
      if (v.kind !== "left" || v.reason !== "changed") code = 1;
      continue;
    }
    const r = await repair(ctx, d);
    if (r.kind === "already") {
      line("already", { error: t("keep.already") });
      continue;
    }
    if (r.kind === "held") {
      line("left", { error: t("keep.held", { deployment: d }) });
      code = 1;
      continue;
    }
    if (r.kind === "repaired") {
      repaired(m, Date.now());
      const servingAfterS = Math.round((Date.now() - lookedAt) / 100) / 10;
      line("repaired", { servingAfterS });
      const last: KeeperAction = { at: iso(Date.now()), action: "repaired", why: v.why, servingAfterS };
      await recordOnNode(site, b, dial, { [LIFE_FILES.keeper]: keeperRecord(m, last) });
      continue;
    }
    code = 1;
    if (r.kind === "locked") {
      line("locked", { error: t("keep.locked", { stack: ctx.stack }) });
      continue;
    }
    if (r.kind !== "failed") continue;
    const { error } = r;
    const now = Date.now();
    const gaveUp = failed(m, site.keep, now, error);
    line(gaveUp ? "gave-up" : "failed", { error: say(error) });
    const last: KeeperAction = { at: iso(now), action: gaveUp ? "gave-up" : "failed", why: v.why, error };
    const files: Record<string, object> = { [LIFE_FILES.keeper]: keeperRecord(m, last) };
    if (gaveUp)
      files[LIFE_FILES.gaveUp] = { at: iso(now), count: m.failures.length, windowS: site.keep.windowS, error };
    await recordOnNode(site, b, dial, files);
  }
  return code;
}

export async function keepCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const intervalS = num(p, "interval", 60);
  if (!(intervalS > 0)) throw new UsageError(t("keep.badInterval"));
  if (bool(p, "unit")) {
    ctx.out(t("keep.unitWritten", { file: writeUnit(ctx, intervalS), stack: ctx.stack }));
    return 0;
  }
  const file = str(p, "log") ?? join(homedir(), ".sm121", "keep", `${ctx.stack}.jsonl`);
  mkdirSync(dirname(file), { recursive: true });
  const log = (l: KeepLine) => {
    appendFileSync(file, `${JSON.stringify(l)}\n`);
    const extra = l.servingAfterS === undefined ? "" : ` (${l.servingAfterS} s)`;
    const why = [...l.why, ...(l.error === undefined ? [] : [l.error])].join("; ");
    ctx.out(t("keep.line", { deployment: l.deployment, action: l.action, extra, why }));
  };
  const memory = new Map<string, KeepMemory>();
  if (bool(p, "once")) return pass({ ctx, p, memory, log });
  ctx.out(t("keep.started", { stack: ctx.stack, interval: intervalS, log: file }));
  let wake: (() => void) | undefined;
  let stopped = false;
  const end = () => {
    stopped = true;
    wake?.();
  };
  process.on("SIGINT", end);
  process.on("SIGTERM", end);
  try {
    while (!stopped) {
      await pass({ ctx, p, memory, log });
      if (stopped) break;
      await new Promise<void>((r) => {
        const timer = setTimeout(r, intervalS * 1000);
        wake = () => {
          clearTimeout(timer);
          r();
        };
      });
    }
    return 0;
  } finally {
    process.off("SIGINT", end);
    process.off("SIGTERM", end);
  }
}
