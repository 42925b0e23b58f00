/** The order the deployments register in: what each comes after. */
import type { ReplicaPlace } from "../render/replicas";
import type { DeploymentBundle } from "../render/types";
import type { SiteObservation } from "../serve/observe";

/**
 * The order the deployments register in, each with the deployments it comes after. Deployments on
 * protected nodes come after the others, so that a destroy meets their refusal before it stops
 * anything else; deployments the look could not see come last, after every other one (nothing
 * happens to them, and the run fails for them at the end); a deployment that shares a node with one
 * made before comes after it (one serve at a time holds a node); a replica comes after the one
 * before it in its set's roll.
 */
export function serveOrder(
  bundles: readonly DeploymentBundle[],
  seen: SiteObservation,
  places: ReadonlyMap<string, ReplicaPlace>,
): Array<[DeploymentBundle, string[]]> {
  const guarded = (b: DeploymentBundle) => b.nodes.some((n) => n.protected);
  const unseen = (b: DeploymentBundle) => seen.unknown[b.deployment] !== undefined;
  const seenFirst = bundles.filter((b) => !unseen(b));
  const order = [...seenFirst.filter((b) => !guarded(b)), ...seenFirst.filter(guarded), ...bundles.filter(unseen)];
  return order.map((b, i) => [
    b,
    order
      .slice(0, i)
      .filter((other) => {
        const open = !guarded(other) && !unseen(other);
        const shares = other.nodes.some((n) => b.nodes.some((m) => m.node === n.node));
        return unseen(b) || (guarded(b) && open) || shares || places.get(b.deployment)?.after === other.deployment;
      })
      .map((other) => other.deployment),
  ]);
}
