/** The ScrapeTargets resource of the deployments this run serves, from the plan's ScrapePlan (src/plan/files). */
import type { Input, Output } from "@pulumi/pulumi/output";
import type { CustomResourceOptions } from "@pulumi/pulumi/resource";
import type { ScrapePlan } from "../plan/types";
import type { ConnectionSettings } from "../providers/settings";
import { ScrapeTargets } from "../providers/scrapeTargets";

export function scrapeTargetsOf(
  plan: ScrapePlan,
  connection: Input<ConnectionSettings> | Output<ConnectionSettings>,
  opts: CustomResourceOptions,
): ScrapeTargets {
  const { file } = plan;
  const inputs = { path: plan.path, content: file.text, plan: file.plan, warnings: file.warnings, found: plan.found };
  return new ScrapeTargets("scrape-targets", { ...inputs, connection, node: plan.node }, opts);
}
