/**
 * `sm121 render <deployment>`: each node's bundle and every script `pulumi up` runs there (by
 * step: preflight, stop, memory-gate, write, start, readiness, verify), without Pulumi and without
 * touching a node. `--step NAME` prints one step, `--json` is for tools, `--out DIR` writes a
 * publishable bundle.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { parse as parseYaml } from "yaml";
import { stackFile } from "../project";
import type { Recipe } from "../recipe/types";
import { engineSequenceBundle } from "../render/deployment";
import { fitOf } from "../render/memfit";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { UsageError, bool, str, type Parsed } from "./args";
import { contextProject, type CliContext } from "./context";
import { fitTable } from "./fit";
import { renderSchema } from "./schemas";
import { t } from "../text/messages";
import { STEPS, isStep, stepScripts as serveSteps, type Step } from "../serve/sequence";

/** The run's UTC time, which the up fills in. */
const STAMP_PLACEHOLDER = "YYYYMMDDTHHMMSSZ";
const RENDERED_PLACEHOLDER = "YYYY-MM-DDTHH:MM:SSZ";

/** The secrets of the stack, by .env key, each shown as the config key that holds it. */
export type SecretNames = Partial<Record<"HF_TOKEN" | "API_KEY", string>>;

/** The scripts of every step, with placeholders for what only the run knows (never a secret). */
function stepScripts(b: DeploymentBundle, n: NodeBundle, secrets: SecretNames): Record<Step, string> {
  const placeholders = Object.fromEntries(Object.entries(secrets).map(([k, name]) => [k, `<secret ${name}>`]));
  return serveSteps(b, n, { stamp: STAMP_PLACEHOLDER, renderedAt: RENDERED_PLACEHOLDER, secrets: placeholders });
}

export function renderJson(
  b: DeploymentBundle,
  nodes: NodeBundle[],
  steps: readonly Step[] = STEPS,
  secrets: SecretNames = {},
): unknown {
  return {
    deployment: b.deployment,
    recipe: b.recipe,
    engine: b.engine,
    deploy: b.deploy,
    shape: b.shape,
    identity: b.identity,
    nodes: nodes.map((n) => {
      const scripts = stepScripts(b, n, secrets);
      return {
        node: n.node,
        rank: n.rank,
        host: n.conn.kind === "local" ? "local" : `${n.conn.user}@${n.conn.host}:${n.conn.port}`,
        argv: n.argv,
        launch: n.launch,
        env: n.env,
        files: n.files.map((f) => ({ path: f.path, sha256: f.sha256, content: f.content })),
        steps: Object.fromEntries(steps.map((s) => [s, scripts[s]])),
      };
    }),
  };
}

function nodeHeading(n: NodeBundle): string {
  const api = n.api === undefined ? "" : t("render.nodeApi", { url: n.api.url });
  const byRank0 = n.runs ? "" : t("render.nodeByRank0");
  return `## ${t("render.node", { node: n.node, rank: n.rank, more: api + byRank0 })}`;
}

function stepLines(b: DeploymentBundle, n: NodeBundle, steps: readonly Step[], secrets: SecretNames): string[] {
  const scripts = stepScripts(b, n, secrets);
  return steps.flatMap((s) => [`--- ${t("render.step", { step: s })}`, scripts[s]]);
}

function text(b: DeploymentBundle, nodes: NodeBundle[], secrets: SecretNames, recipe: Recipe | undefined): string[] {
  const lines = [
    `# ${t("render.deployment", {
      deployment: b.deployment,
      recipe: b.recipe,
      file: b.recipeFile,
      engine: b.engine,
      deploy: b.deploy,
      shape: b.shape,
    })}`,
    `# ${t("render.identity", { identity: b.identity })}`,
  ];
  if (b.profile !== undefined)
    lines.push(
      `# ${t(b.runnable ? "render.profile" : "render.profileRenderOnly", {
        profile: b.profile,
        status: b.profileStatus ?? "stable",
      })}`,
    );
  for (const w of b.warnings) lines.push(`# ${t("render.warning", { warning: w })}`);
  lines.push(`# ${t("render.placeholders", { stamp: STAMP_PLACEHOLDER, rendered: RENDERED_PLACEHOLDER })}`);
  lines.push("", `# ${t("fit.renderNote")}`, ...fitTable(fitOf(b, recipe, {}), b.recipeFile).map((l) => `# ${l}`));
  for (const n of nodes) {
    lines.push("", nodeHeading(n));
    if (n.argv.length > 0) lines.push(`argv: ${JSON.stringify(n.argv)}`);
    lines.push("launch:", ...n.launch.split("\n").map((l) => `  ${l}`));
    for (const f of n.files)
      lines.push(
        `--- ${t("render.file", { path: f.path, mode: f.mode.toString(8), sha: f.sha256.slice(0, 16) })}`,
        ...f.content.replace(/\n$/, "").split("\n"),
      );
    lines.push(...stepLines(b, n, STEPS, secrets));
  }
  return lines;
}

/** A publishable bundle: per node its files under their node paths, and one script per step. */
function writeOut(dir: string, b: DeploymentBundle, nodes: NodeBundle[], secrets: SecretNames): void {
  for (const n of nodes) {
    const base = join(dir, b.deployment, n.node);
    for (const f of n.files) {
      const rel = f.path.replace(/^~\//, "home/").replace(/^\//, "");
      mkdirSync(dirname(join(base, "files", rel)), { recursive: true });
      writeFileSync(join(base, "files", rel), f.content, { mode: f.mode });
    }
    const scripts = stepScripts(b, n, secrets);
    const named: Array<[string, string]> = [
      ...STEPS.map((s): [string, string] => [`${s}.sh`, scripts[s]]),
      ["status.sh", n.status],
    ];
    for (const [name, body] of named) {
      writeFileSync(
        join(base, name),
        `#!/usr/bin/env bash\n# ${b.deployment} on ${n.node} (rank ${n.rank}); ` +
          `run as: bash -s < ${name}\nset -euo pipefail\n${body}\n`,
        { mode: 0o755 },
      );
    }
  }
  writeFileSync(
    join(dir, b.deployment, "bundle.json"),
    `${JSON.stringify(renderJson(b, nodes, STEPS, secrets), null, 2)}\n`,
  );
}

/**
 * The secrets set in the stack file, by config name (their values stay encrypted there): the write
 * step shows where up puts them.
 */
export function stackSecrets(root: string, stack: string): SecretNames {
  const doc = parseYaml(readFileSync(stackFile(root, stack), "utf8")) as { config?: Record<string, unknown> } | null;
  const config = doc?.config ?? {};
  const has = (k: string) => Object.hasOwn(config, k);
  return {
    ...(has("sm121:hfToken") && { HF_TOKEN: "sm121:hfToken" }),
    ...(has("sm121:apiKey") && { API_KEY: "sm121:apiKey" }),
  };
}

export function renderCommand(ctx: CliContext, p: Parsed): number {
  const name = p.positional[0];
  const project = contextProject(ctx);
  const found = project.bundles.find((x) => x.deployment === name);
  const b = found === undefined ? undefined : engineSequenceBundle(found, project.site.hooks);
  const deployments = project.bundles.map((x) => x.deployment).join(", ") || "-";
  if (name === undefined) throw new UsageError(t("cli.needsDeployment", { deployments }));
  if (b === undefined) {
    ctx.err(t("cli.unknownDeployment", { deployment: name, stack: ctx.stack, deployments }));
    return 2;
  }
  const step = str(p, "step");
  if (step !== undefined && !isStep(step))
    throw new UsageError(t("render.unknownStep", { step, steps: STEPS.join(", ") }));
  const only = str(p, "node");
  const nodes = only === undefined ? b.nodes : b.nodes.filter((n) => n.node === only);
  if (nodes.length === 0) {
    ctx.err(
      t("render.noNode", { deployment: b.deployment, node: only ?? "", nodes: b.nodes.map((n) => n.node).join(", ") }),
    );
    return 2;
  }
  const secrets = stackSecrets(ctx.root, ctx.stack);
  const out = str(p, "out");
  if (out !== undefined) {
    writeOut(out, b, nodes, secrets);
    ctx.out(t("render.wrote", { dir: join(out, b.deployment) }));
    return 0;
  }
  const steps: readonly Step[] = step === undefined ? STEPS : [step];
  if (bool(p, "json")) ctx.out(JSON.stringify(renderSchema().parse(renderJson(b, nodes, steps, secrets)), null, 2));
  else if (step !== undefined)
    for (const n of nodes) ctx.out([nodeHeading(n), ...stepLines(b, n, steps, secrets)].join("\n"));
  else for (const l of text(b, nodes, secrets, project.recipes.get(b.recipe))) ctx.out(l);
  return 0;
}
