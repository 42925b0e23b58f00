/**
 * `sm121 down <deployment>`: stops one deployment on all its nodes through Pulumi, a targeted
 * destroy of its Recipe component and everything that depends on it:
 *   pulumi stack export                      -> the component's URN, from the stack's state
 *   pulumi destroy --target URN --target-dependents --yes --skip-preview (no outputs, no progress dots)
 * Pulumi's own environment passes through (backend, passphrase, SM121_ALLOW_PROTECTED): the
 * provider refuses a protected node without the allowance, and down says so in one line.
 *
 * The site still lists the deployment: the next `pulumi up` serves it again (remove it from
 * sm121:deployments to keep it down).
 */
import { spawn } from "node:child_process";

import type { Parsed } from "./args";
import { selectedDeployment } from "./connect";
import { contextProject, type CliContext } from "./context";
import { t } from "./i18n";

/** The type token of the component each deployment is (src/components/recipe.ts). */
const RECIPE_TYPE = "sm121:index:Recipe";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function pulumi(ctx: CliContext, args: string[], onLine?: (l: string) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn("pulumi", args, { cwd: ctx.root, env: process.env, stdio: ["ignore", "pipe", "pipe"] });
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
  const urns = (state.deployment?.resources ?? []).filter((r) => r.type === RECIPE_TYPE && typeof r.urn === "string").map((r) => String(r.urn));
  return urns.find((u) => u.endsWith(`::${deployment}`));
}

/** The lines of a failed destroy that say a protected node was refused (the provider's words). */
export function refusals(output: string): string[] {
  return [...new Set(output.split("\n").map((l) => l.trim().replace(/^error:\s*/, "")).filter((l) => /^node \S+ is protected and this run would stop /.test(l)))];
}

export async function downCommand(ctx: CliContext, p: Parsed): Promise<number> {
  const project = contextProject(ctx);
  const b = selectedDeployment(project.bundles, p.positional[0], ctx.stack);
  const exported = await pulumi(ctx, ["stack", "export", "--stack", ctx.stack]);
  if (exported.code !== 0) {
    ctx.err(t("down.exportFailed", { stack: ctx.stack, stderr: exported.stderr.trim().slice(-500) }));
    return 1;
  }
  const urn = componentUrn(exported.stdout, b.deployment);
  if (urn === undefined) {
    ctx.out(t("down.notDeployed", { deployment: b.deployment, stack: ctx.stack }));
    return 0;
  }
  ctx.out(t("down.stopping", { deployment: b.deployment, nodes: b.nodes.map((n) => n.node).join(", "), urn }));
  // The stack's outputs are the last up's (a targeted destroy leaves them): not shown, they would still list this deployment.
  const args = ["destroy", "--stack", ctx.stack, "--target", urn, "--target-dependents", "--yes", "--skip-preview", "--non-interactive", "--suppress-outputs", "--suppress-progress"];
  const run = await pulumi(ctx, args, (l) => ctx.out(`  ${l}`));
  if (run.code !== 0) {
    for (const l of run.stderr.trim().split("\n").filter((x) => x !== "")) ctx.err(`  ${l}`);
    const refused = refusals(`${run.stdout}\n${run.stderr}`);
    if (refused.length > 0) for (const r of refused) ctx.err(t("down.refused", { reason: r }));
    else ctx.err(t("down.failed", { deployment: b.deployment, code: run.code }));
    return 1;
  }
  ctx.out(t("down.done", { deployment: b.deployment, nodes: b.nodes.map((n) => n.node).join(", ") }));
  ctx.out(t("down.stillListed", { deployment: b.deployment, stack: ctx.stack }));
  return 0;
}
