/**
 * `sm121 render <deployment>`: each node's bundle and the exact launch command, without Pulumi
 * and without touching a node. `--json` for tools, `--out DIR` for a publishable bundle.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { bool, str, type Parsed } from "./args";
import { contextProject, type CliContext } from "./context";

export function renderJson(b: DeploymentBundle, nodes: NodeBundle[]): unknown {
  return {
    deployment: b.deployment,
    recipe: b.recipe,
    engine: b.engine,
    deploy: b.deploy,
    shape: b.shape,
    identity: b.identity,
    nodes: nodes.map((n) => ({
      node: n.node,
      rank: n.rank,
      host: n.conn.kind === "local" ? "local" : `${n.conn.user}@${n.conn.host}:${n.conn.port}`,
      argv: n.argv,
      launch: n.launch,
      env: n.env,
      files: n.files.map((f) => ({ path: f.path, sha256: f.sha256, content: f.content })),
    })),
  };
}

function text(b: DeploymentBundle, nodes: NodeBundle[]): string[] {
  const lines = [`# deployment ${b.deployment}: recipe ${b.recipe} (${b.recipeFile}), engine ${b.engine}, deploy ${b.deploy}, ${b.shape}`, `# identity ${b.identity}`];
  if (b.profile !== undefined) lines.push(`# profile ${b.profile} (${b.profileStatus ?? "stable"}${b.runnable ? "" : ", render-only"})`);
  for (const w of b.warnings) lines.push(`# warning: ${w}`);
  for (const n of nodes) {
    lines.push("", `## ${n.node} (rank ${n.rank}${n.api === undefined ? "" : `, API ${n.api.url}`}${n.runs ? "" : ", brought up by rank 0"})`);
    if (n.argv.length > 0) lines.push(`argv: ${JSON.stringify(n.argv)}`);
    lines.push("launch:", ...n.launch.split("\n").map((l) => `  ${l}`));
    for (const f of n.files) lines.push(`--- ${f.path} (mode ${f.mode.toString(8)}, sha256 ${f.sha256.slice(0, 16)})`, ...f.content.replace(/\n$/, "").split("\n"));
    lines.push("--- start (bash -s on the node)", n.start, "--- stop", n.stop);
  }
  return lines;
}

/** A publishable bundle: per node its files under their node paths, and the three scripts. */
function writeOut(dir: string, b: DeploymentBundle, nodes: NodeBundle[]): void {
  for (const n of nodes) {
    const base = join(dir, b.deployment, n.node);
    for (const f of n.files) {
      const rel = f.path.replace(/^~\//, "home/").replace(/^\//, "");
      mkdirSync(dirname(join(base, "files", rel)), { recursive: true });
      writeFileSync(join(base, "files", rel), f.content, { mode: f.mode });
    }
    for (const [name, body] of [["start.sh", n.start], ["stop.sh", n.stop], ["status.sh", n.status]] as const) {
      writeFileSync(join(base, name), `#!/usr/bin/env bash\n# ${b.deployment} on ${n.node} (rank ${n.rank}); run as: bash -s < ${name}\nset -euo pipefail\n${body}\n`, { mode: 0o755 });
    }
  }
  writeFileSync(join(dir, b.deployment, "bundle.json"), `${JSON.stringify(renderJson(b, nodes), null, 2)}\n`);
}

export function renderCommand(ctx: CliContext, p: Parsed): number {
  const name = p.positional[0];
  const project = contextProject(ctx);
  const b = project.bundles.find((x) => x.deployment === name);
  if (b === undefined) {
    ctx.err(`no deployment "${name ?? ""}" in Pulumi.${ctx.stack}.yaml; deployments: ${project.bundles.map((x) => x.deployment).join(", ")}`);
    return 2;
  }
  const only = str(p, "node");
  const nodes = only === undefined ? b.nodes : b.nodes.filter((n) => n.node === only);
  if (nodes.length === 0) {
    ctx.err(`deployment ${b.deployment} has no node "${only ?? ""}"; its nodes: ${b.nodes.map((n) => n.node).join(", ")}`);
    return 2;
  }
  const out = str(p, "out");
  if (out !== undefined) {
    writeOut(out, b, nodes);
    ctx.out(`wrote ${join(out, b.deployment)}`);
    return 0;
  }
  if (bool(p, "json")) ctx.out(JSON.stringify(renderJson(b, nodes), null, 2));
  else for (const l of text(b, nodes)) ctx.out(l);
  return 0;
}
