/**
 * GatewayFragment: the gateway backend file, rewritten on every up from the deployments' outputs.
 *
 * - create/update: writes the file (a backup of a different old one first) on the machine that
 *   runs Pulumi, or on a node of the site; says which gateway restart applies it.
 * - diff:   pure: the new content's sha256 against the one written (or found by refresh), and
 *           whether an engine it lists was started since (a failed serve disables its endpoints in
 *           the file itself; the next serve must put them back). While an engine is being served
 *           the content is not known yet, and it is rewritten after. A hand edit of the file is
 *           refresh's to find, as an engine's drift is.
 * - delete: removes the file.
 * - read:   the sha256 of the file as it is.
 *
 * `pulumi preview --diff` shows its plan (render/gatewayPlan: each endpoint enabled or disabled,
 * known at plan time); the file's text and where to reach its node travel under `__file`, which
 * Pulumi never displays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all, output } from "@pulumi/pulumi/output";
import { ShimResource } from "./shim";
import type { GatewayModel } from "../render/gateway";
import { gatewayPlan } from "../render/gatewayPlan";
import type { NodeConn } from "../render/types";
import type { DeploymentOutcome } from "../serve/outcome";
import type { ConnectionSettings } from "./engineDeployment";

export interface GatewayFragmentInputs {
  path: pulumi.Input<string>;
  format: pulumi.Input<string>;
  /** The deployments as declared: the plan, known before any engine is served. */
  models: pulumi.Input<GatewayModel[]>;
  /** The file as the served deployments make it (their served model and status). */
  content: pulumi.Input<string>;
  warnings: pulumi.Input<string[]>;
  restartNote: pulumi.Input<string>;
  /** The engines' outcomes, in the order of `models`: when each was last started. */
  served: pulumi.Input<Array<DeploymentOutcome | undefined>>;
  /** Write on this node instead of the machine that runs Pulumi. */
  node?: pulumi.Input<{ name: string; conn: NodeConn }>;
  connection: pulumi.Input<ConnectionSettings>;
}

/** What the provider needs besides the shown properties. */
export interface GatewayFile {
  content: string;
  warnings: string[];
  restartNote: string;
  /** Per deployment, its status and each node's start: a new start rewrites the file. */
  served: string[];
  conn?: NodeConn;
}

/** The stored and shown form. */
export interface GatewayWire {
  path: string;
  format: string;
  /** The node it is written on; none: the machine that runs Pulumi. */
  node?: string;
  endpoints: string;
  connection: ConnectionSettings;
  __file: GatewayFile;
  sha256?: string;
}

export class GatewayFragment extends ShimResource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: GatewayFragmentInputs, opts?: pulumi.CustomResourceOptions) {
    const node = output(args.node);
    const props: { [K in keyof GatewayWire]: pulumi.Input<GatewayWire[K]> } = {
      path: args.path,
      format: args.format,
      node: node.apply((n) => n?.name),
      endpoints: all([args.format, args.path, node, args.models]).apply(([format, path, n, models]) => gatewayPlan(format, n === undefined ? path : `${n.name}:${path}`, models)),
      connection: args.connection,
      __file: all([args.content, args.warnings, args.restartNote, args.served, node]).apply(([content, warnings, restartNote, outcomes, n]) => ({
        content,
        warnings,
        restartNote,
        served: outcomes.map((o) => [o?.status ?? "unknown", ...(o?.nodes ?? []).map((x) => x.startedAt ?? "")].join(" ")),
        ...(n !== undefined && { conn: n.conn }),
      })),
      sha256: undefined,
    };
    super("gatewayImpl", "GatewayFragment", name, props, { ...opts, additionalSecretOutputs: ["connection"] });
  }
}
