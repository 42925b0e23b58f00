/**
 * Prometheus' scrape targets for a site, as a file_sd file: one target group per deployment and
 * node that serves the engine's metrics (the node that answers the API, when the engine's driver
 * exports Prometheus metrics), labelled with the deployment, node, rank, engine, model and recipe.
 * Known at plan time from the bundles alone: a preview shows the targets a node move changes.
 */
import { driverFor } from "../engines";
import { isLoopback } from "./node";
import type { DeploymentBundle } from "./types";
import { msg, type Msg } from "../text/messages";

/**
 * One entry of a file_sd file
 * (https://prometheus.io/docs/prometheus/latest/configuration/configuration/#file_sd_config).
 */
export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

export interface ScrapeFile {
  /** The file's text: a JSON list of target groups. */
  text: string;
  groups: TargetGroup[];
  /** What the preview shows: one line per target, then the deployments that have none and why. */
  plan: string[];
  /** Said where they are printed (the provider's write), in the reader's language. */
  warnings: Msg[];
}

/**
 * The scrape file of the deployments of this run (a downed or removed one has no targets). `on`:
 * the node the file is written on, whose loopback Prometheus shares; none: the machine that runs
 * Pulumi.
 */
export function scrapeFile(bundles: readonly DeploymentBundle[], on: string | undefined): ScrapeFile {
  const groups: TargetGroup[] = [];
  const plan: string[] = [];
  const warnings: Msg[] = [];
  for (const b of bundles) {
    const metrics = driverFor(b.engine).metrics;
    if (metrics === undefined) {
      plan.push(`${b.deployment}: none (${b.engine} exports no Prometheus metrics)`);
      continue;
    }
    for (const nb of b.nodes) {
      if (nb.api === undefined) continue;
      // An engine bound to every interface answers on the node's own address.
      const host = nb.api.host === "0.0.0.0" ? nb.ip : nb.api.host;
      const target = `${host}:${nb.api.port}`;
      const labels = {
        __metrics_path__: metrics.path,
        deployment: b.deployment,
        node: nb.node,
        rank: String(nb.rank),
        // Not `engine`: vLLM labels its own series `engine` (the engine core's index), which
        // Prometheus would rename to exported_engine on every vllm:* series.
        sm121_engine: b.engine,
        model: b.readiness.servedName ?? b.deployment,
        recipe: b.recipe,
      };
      groups.push({ targets: [target], labels });
      plan.push(
        `${b.deployment}: ${target}${metrics.path} (${nb.node}, rank ${nb.rank}, ${b.engine}, model ${labels.model})`,
      );
      // Loopback binds only answer on the node itself (spark2 with BIND=127.0.0.1, seed 001).
      if (host !== nb.ip && isLoopback(host) && on !== nb.node) {
        warnings.push(msg("state.scrapeLoopback", { deployment: b.deployment, node: nb.node, host, target }));
      }
    }
  }
  return { text: `${JSON.stringify(groups, null, 2)}\n`, groups, plan, warnings };
}
