/**
 * `spare:` on a `replicas:` entry: a node group kept free for the entry's replicas. A roll starts
 * the new recipe there first (a surge, render/surge), so that no replica is missing while each
 * restarts; the spare is free again when the roll ends. The checks here are the site's own (the
 * nodes exist, none is a replica's, the group has a replica's size); whether the recipe fits there
 * and whether the spare is free is the plan's to say, as it changes from run to run.
 */
import { msg, type Msg } from "../text/messages";
import type { FieldPath } from "./locate";
import type { SiteNode, Spare } from "./types";

/** The parts of a site entry the spare checks read. */
interface Entry {
  name?: string | undefined;
  recipe: string;
  profile?: string | undefined;
  replicas?: string[][] | undefined;
  spare?: string[] | undefined;
  overlay?: string | undefined;
  overlayWins: boolean;
}

type Err = (path: FieldPath, problem: Msg, fix: Msg) => void;

/** The entry's spare group, checked; none when it declares none or when a check failed (`err` says why). */
export function spareOf(d: Entry, i: number, nodes: Readonly<Record<string, SiteNode>>, err: Err): Spare[] {
  if (d.spare === undefined) return [];
  const at: FieldPath = ["deployments", i, "spare"];
  const of = d.name ?? (d.profile === undefined ? d.recipe : `${d.recipe}-${d.profile}`);
  if (d.replicas === undefined) {
    err(at, msg("spec.spare.needsReplicas"), msg("spec.spare.needsReplicasFix"));
    return [];
  }
  let ok = true;
  for (const [j, n] of d.spare.entries()) {
    if (!Object.hasOwn(nodes, n)) {
      const known = Object.keys(nodes).join(", ");
      err([...at, j], msg("spec.site.unknownNode", { node: n }), msg("spec.site.unknownNodeFix", { nodes: known }));
      ok = false;
    }
    if (d.spare.indexOf(n) !== j) {
      err([...at, j], msg("spec.site.nodeTwice", { node: n }), msg("spec.site.nodeTwiceFix"));
      ok = false;
    }
    const r = d.replicas.findIndex((g) => g.includes(n));
    if (r >= 0) {
      err(
        [...at, j],
        msg("spec.spare.inReplica", { node: n, replica: r + 1, of }),
        msg("spec.spare.inReplicaFix", { of }),
      );
      ok = false;
    }
  }
  const size = d.replicas[0]?.length ?? 0;
  if (d.spare.length !== size) {
    err(at, msg("spec.spare.size", { count: d.spare.length, of, size }), msg("spec.spare.sizeFix", { size }));
    ok = false;
  }
  if (!ok) return [];
  const deployment: Spare["deployment"] = {
    name: `${of}-spare`,
    recipe: d.recipe,
    nodes: d.spare,
    overlayWins: d.overlayWins,
    at: { entry: ["deployments", i], nodes: at },
    replicaOf: of,
    ...(d.profile !== undefined && { profile: d.profile }),
    ...(d.overlay !== undefined && { overlay: d.overlay }),
  };
  return [{ of, nodes: d.spare, deployment }];
}
