/**
 * GatewayFragment: the gateway backend file, written by every up from the deployments' outcomes.
 *
 * - create/update: renders the file (gateway/file.render) from the deployments as served, plus, kept
 *   disabled, the endpoints of deployments removed from the site that the plan-time look still
 *   found on their nodes (their stop has not run yet, or failed); writes it (a backup of a
 *   different old one first) on the machine that runs Pulumi, or on a node of the site; says
 *   which gateway restart applies it.
 * - diff:   pure: the content's sha256 against the one written; the file's sha256 as the plan-time
 *           look found it on its node (`found`: edited or removed there since, and the plan says
 *           so); whether an engine it lists was started since (a failed serve disables its
 *           endpoints in the file itself; the next serve puts them back). While an engine is
 *           being served the content is not known yet, and it is written after.
 * - delete: the file stays, every endpoint disabled (seed 001: a downed deployment's endpoint stays,
 *           disabled); a destroy deletes this before the engines it lists, so they stop unrouted.
 * - read:   the sha256 of the file as it is.
 *
 * `pulumi preview --diff` shows its plan (gateway/plan.render: each endpoint enabled or disabled,
 * known at plan time); what the file is made of and where to reach its node travel under
 * `__file`, which Pulumi never displays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all, output } from "@pulumi/pulumi/output";
import { ShimResource } from "./shim";
import type { GatewayWire } from "./wire";
import type { GatewayFormat } from "../recipe/types";
import type { GatewayModel } from "../gateway/file.render";
import { gatewayPlan } from "../gateway/plan.render";
import type { NodeConn } from "../render/types";
import type { StoredOutcome } from "../serve/outcome";
import type { ConnectionSettings } from "./settings";

export interface GatewayFragmentInputs {
  path: pulumi.Input<string>;
  format: pulumi.Input<GatewayFormat>;
  /** The deployments as declared: the plan, known before any engine is served. */
  models: pulumi.Input<GatewayModel[]>;
  /** The deployments as served (their served model and status), in the order of `models`. */
  current: pulumi.Input<GatewayModel[]>;
  /** sm121:apiKey is set: the engines want a key, which the gateway reads from its environment. */
  apiKey: pulumi.Input<boolean>;
  /** Deployments the site no longer declares that the look found on their nodes: kept, disabled. */
  lingering: pulumi.Input<string[]>;
  /** The file's sha256 as the look found it ("" when it is missing); none when it was not looked at. */
  found?: pulumi.Input<string>;
  /** The engines' outcomes, in the order of `models`: when each was last started. */
  served: pulumi.Input<Array<StoredOutcome | undefined>>;
  /** Write on this node instead of the machine that runs Pulumi. */
  node?: pulumi.Input<{ name: string; conn: NodeConn }>;
  connection: pulumi.Input<ConnectionSettings>;
}

export class GatewayFragment extends ShimResource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: GatewayFragmentInputs, opts?: pulumi.CustomResourceOptions) {
    const node = output(args.node);
    const props: { [K in keyof GatewayWire]: pulumi.Input<GatewayWire[K]> } = {
      path: args.path,
      format: args.format,
      node: node.apply((n) => n?.name),
      endpoints: all([args.format, args.path, node, args.models]).apply(([format, path, n, models]) =>
        gatewayPlan(format, n === undefined ? path : `${n.name}:${path}`, models),
      ),
      connection: args.connection,
      __file: all([args.current, args.apiKey, args.lingering, args.found, args.served, node]).apply(
        ([models, apiKey, lingering, found, outcomes, n]) => ({
          models,
          apiKey,
          lingering,
          ...(found !== undefined && { found }),
          served: outcomes.map((o) =>
            [o?.status ?? "unknown", ...(o?.nodes ?? []).map((x) => x.startedAt ?? "")].join(" "),
          ),
          ...(n !== undefined && { conn: n.conn }),
        }),
      ),
      sha256: undefined,
    };
    super("GatewayFragment", name, props, { ...opts, additionalSecretOutputs: ["connection"] });
  }
}
