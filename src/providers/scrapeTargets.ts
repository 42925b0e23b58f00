/**
 * ScrapeTargets: Prometheus' file_sd file of the engines' /metrics, rendered at plan time from the
 * deployments of this run (render/scrapeTargets) and written where the site says.
 *
 * - create/update: writes the file atomically, on the machine that runs Pulumi or on a node of
 *   the site; an old file that sm121 did not write is kept as a backup first. Prometheus reads a
 *   file_sd file again when it changes: nothing restarts.
 * - diff:   pure: the new content's sha256 against the one written (or found by refresh), and
 *           the plan-time look's sha256 of the file as it is now (`__file.found`), so that a
 *           plain up rewrites a file that was edited or deleted there. A move of the file is a
 *           replace (the old one removed first).
 * - delete: removes the file.
 * - read:   the sha256 of the file as it is.
 *
 * `pulumi preview --diff` shows `targets`, one line per target and its labels; the text and how
 * to reach its node travel under `__file`, which Pulumi never displays.
 */
import type * as pulumi from "@pulumi/pulumi";
import { all, output } from "@pulumi/pulumi/output";
import type { NodeConn } from "../render/types";
import type { FileLook } from "../serve/sitefile";
import type { ConnectionSettings } from "./settings";
import { ShimResource } from "./shim";
import type { ScrapeTargetsWire } from "./wire";
import type { Msg } from "../text/messages";

export interface ScrapeTargetsInputs {
  path: pulumi.Input<string>;
  /** Write on this node instead of the machine that runs Pulumi. */
  node?: pulumi.Input<{ name: string; conn: NodeConn }>;
  /** The file's text and its plan (render/scrapeTargets). */
  content: pulumi.Input<string>;
  plan: pulumi.Input<string[]>;
  /** Messages (src/text/messages), said where the provider prints them. */
  warnings: pulumi.Input<Msg[]>;
  /** What the plan-time look found where the file is. */
  found: pulumi.Input<FileLook>;
  connection: pulumi.Input<ConnectionSettings>;
}

export class ScrapeTargets extends ShimResource {
  declare readonly sha256: pulumi.Output<string>;

  constructor(name: string, args: ScrapeTargetsInputs, opts?: pulumi.CustomResourceOptions) {
    const node = output(args.node);
    const props: { [K in keyof ScrapeTargetsWire]: pulumi.Input<ScrapeTargetsWire[K]> } = {
      path: args.path,
      node: node.apply((n) => n?.name),
      targets: output(args.plan).apply((lines) => `${lines.join("\n")}\n`),
      connection: args.connection,
      __file: all([args.content, args.warnings, args.found, node]).apply(([content, warnings, found, n]) => ({
        content,
        warnings,
        found,
        ...(n !== undefined && { conn: n.conn }),
      })),
      sha256: undefined,
    };
    super("ScrapeTargets", name, props, { ...opts, additionalSecretOutputs: ["connection"] });
  }
}
