/**
 * `sm121 down <deployment>`: stops one deployment on all its nodes through Pulumi, as if it were
 * removed from the site: the program leaves out what SM121_DOWN names.
 *   pulumi stack export                   -> is it in the stack's state at all?
 *   SM121_DOWN=<d> pulumi preview --json  -> refused when the up would change anything else
 *   SM121_DOWN=<d> pulumi up --yes        -> its delete stops it; the gateway file drops it
 * (A targeted destroy cannot do this: every deployment on a protected node comes after the others,
 * and the gateway depends on all, so the destroy of one would take them along.)
 * Pulumi's own environment passes through (backend, passphrase, SM121_ALLOW_PROTECTED): a protected
 * node is refused at plan time without the allowance, and down says so in one line.
 *
 * The site still lists the deployment: the next `pulumi up` serves it again (remove it from
 * sm121:deployments to keep it down).
 */
import { spawn } from "node:child_process";

import { DEPLOYMENT_TYPE, DEPLOYMENT_TYPES_BEFORE } from "../text/tokens";
import type { Parsed } from "./args";
import { selectedDeployment } from "./connect";
import { contextProject, type CliContext } from "./context";
import { currentLocale, t } from "../text/messages";
import { pulumiRunEnv } from "./pulumi";
import { allowedProtected, leavingRefusal } from "../text/protected";

/** The type tokens of the component each deployment is, now and before (src/text/tokens.ts). */
const DEPLOYMENT_TYPES: readonly string[] = [DEPLOYMENT_TYPE, ...DEPLOYMENT_TYPES_BEFORE];

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function pulumi(ctx: CliContext, args: string[], env: NodeJS.ProcessEnv, onLine?: (l: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("pulumi", args, { cwd: ctx.root, env: pulumiRunEnv(env), stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let partial = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
      if (onLine === undefined) return;
      const lines = (partial + d).split("\n");
      partial = lines.pop() ?? "";
      for (const l of lines) onLine(l);
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => (stderr += d));
    child.on("error", (e: NodeJS.ErrnoException) => reject(e.code === "ENOENT" ? new Error(t("down.noPulumi")) : e));
    child.on("close", (code) => {
      if (onLine !== undefined && partial !== "") onLine(partial);
      resolve({ code: code ?? 1, stdout, stderr });
    });
  });
}

/** The URN of the deployment's component in an exported state, if it is there. */
export function componentUrn(exported: string, deployment: string): string | undefined {
  const state = JSON.parse(exported) as { deployment?: { resources?: Array<{ urn?: unknown; type?: unknown }> } };
  const urns = (state.deployment?.resources ?? [])
    .filter((r) => DEPLOYMENT_TYPES.includes(String(r.type)) && typeof r.urn === "string")
    .map((r) => String(r.urn));
  return urns.find((u) => u.endsWith(`::${deployment}`));
}

/** What a preview (`pulumi preview --json`) would change besides the deployment and the gateway file. */
export function otherChanges(previewJson: string, deployment: string): string[] {
  const plan = JSON.parse(previewJson) as { steps?: Array<{ op?: unknown; urn?: unknown }> };
  // The Deployment component and its children (src/components/recipe.ts names them from it).
  const children = new RegExp(
    `^${deployment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}(-(engine|dgpp|model|image|hooks-.+))?$`,
  );
  const ours = (urn: string) =>
    children.test(urn.split("::").pop() ?? "") || urn.endsWith("::gateway") || urn.includes("pulumi:pulumi:Stack::");
  return (plan.steps ?? [])
    .filter((st) => st.op !== "same" && typeof st.urn === "string" && !ours(st.urn))
    .map((st) => `${String(st.op)} ${String(st.urn).split("::").pop() ?? ""}`);
}

export async function downCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const project = contextProject(ctx);
  const b = selectedDeployment(project.bundles, p.positional[0], ctx.stack);
  const exported = await pulumi(ctx, ["stack", "export", "--stack", ctx.stack], process.env);
  if (exported.code !== 0) {
    ctx.err(t("down.exportFailed", { stack: ctx.stack, stderr: exported.stderr.trim().slice(-500) }));
    return 1;
  }
  if (componentUrn(exported.stdout, b.deployment) === undefined) {
    ctx.out(t("down.notDeployed", { deployment: b.deployment, stack: ctx.stack }));
    return 0;
  }
  // Deployments that an earlier down stopped stay down: this up must not serve them again.
  const alreadyDown = project.bundles
    .map((x) => x.deployment)
    .filter((d) => d !== b.deployment && componentUrn(exported.stdout, d) === undefined);
  // The provider speaks the language of this run (--lang wins over the environment's).
  const env = { ...process.env, SM121_DOWN: [b.deployment, ...alreadyDown].join(","), SM121_LANG: currentLocale() };
  // The program refuses the same at plan time; down says it before it runs Pulumi at all.
  const allowed = allowedProtected(process.env);
  const refused = b.nodes.filter((n) => n.protected && !allowed.includes(n.node));
  if (refused.length > 0) {
    for (const n of refused) ctx.err(t("down.refused", { reason: leavingRefusal(n.node, b.deployment, true) }));
    return 1;
  }
  const fail = (run: Run): number => {
    for (const l of run.stderr
      .trim()
      .split("\n")
      .filter((x) => x !== ""))
      ctx.err(`  ${l}`);
    ctx.err(t("down.failed", { deployment: b.deployment, code: run.code }));
    return 1;
  };
  const preview = await pulumi(ctx, ["preview", "--stack", ctx.stack, "--json", "--non-interactive"], env);
  if (preview.code !== 0) return fail(preview);
  const others = otherChanges(preview.stdout, b.deployment);
  if (others.length > 0) {
    ctx.err(t("down.pending", { changes: others.join(", "), deployment: b.deployment }));
    return 1;
  }
  ctx.out(t("down.stopping", { deployment: b.deployment, nodes: b.nodes.map((n) => n.node).join(", ") }));
  const args = [
    "up",
    "--stack",
    ctx.stack,
    "--yes",
    "--skip-preview",
    "--non-interactive",
    "--suppress-outputs",
    "--suppress-progress",
  ];
  const run = await pulumi(ctx, args, env, (l) => ctx.out(`  ${l}`));
  if (run.code !== 0) return fail(run);
  ctx.out(t("down.done", { deployment: b.deployment, nodes: b.nodes.map((n) => n.node).join(", ") }));
  ctx.out(t("down.stillListed", { deployment: b.deployment, stack: ctx.stack }));
  return 0;
}
