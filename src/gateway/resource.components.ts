/**
 * The gateway file's resource (`gateway`, a GatewayFragment), registered from the plan's
 * GatewayPlan (src/plan/files): its endpoints as declared (the plan), as served (each engine's
 * served model and status), the deployments the site no longer declares that the look still found
 * on their nodes (kept in the file, disabled), and the file's sha256 as the look found it (an
 * edited or deleted file is written again by a plain up).
 */
import type * as pulumi from "@pulumi/pulumi";
import { all } from "@pulumi/pulumi/output";
import { GatewayFragment } from "../providers/gatewayFragment";
import type { ConnectionSettings } from "../providers/settings";
import type { GatewayPlan } from "../plan/types";
import type { StoredOutcome } from "../serve/outcome";

/** `outcomes`: each deployment's, in the order of the plan's models. */
export function gatewayResource(
  plan: GatewayPlan,
  outcomes: ReadonlyArray<pulumi.Output<StoredOutcome> | undefined>,
  connection: pulumi.Input<ConnectionSettings>,
  apiKey: boolean,
  opts: pulumi.CustomResourceOptions,
): GatewayFragment {
  const { models, settings } = plan;
  const served = all([...outcomes]);
  // As declared (the plan, known before any engine is served); the file takes each served model and status.
  const current = served.apply((outs) =>
    models.map((m, i) => ({
      ...m,
      model: plan.model ?? outs[i]?.servedModel ?? m.model,
      status: outs[i]?.status ?? "unknown",
    })),
  );
  return new GatewayFragment(
    "gateway",
    {
      path: settings.path,
      format: settings.format,
      models,
      current,
      apiKey,
      lingering: plan.lingering,
      found: plan.found,
      served,
      connection,
      node: settings.node,
    },
    opts,
  );
}
