/** An EngineDeployment's inputs as the program hands them to the provider, for tests of check, diff and decide. */
import { pack } from "../../src/providers/packed";
import type { EngineWire } from "../../src/providers/wire";
import { deploymentPlan } from "../../src/render/plan";
import type { DeploymentBundle } from "../../src/render/types";

export const CONNECTION = { knownHosts: "~/.ssh/known_hosts", hostKeys: "strict" as const };

export const NOTHING_ALLOWED = { protected: [], experimental: false, restart: false };

/** The inputs of `bundle` with no drift, secret, allowance or preflight finding; `over` replaces any of them. */
export function engineWire(bundle: DeploymentBundle, over: Partial<EngineWire> = {}): EngineWire {
  return {
    deployment: bundle.deployment,
    plan: deploymentPlan(bundle),
    drift: [],
    secrets: {},
    connection: CONNECTION,
    __bundle: pack(bundle),
    __run: { allow: NOTHING_ALLOWED, preflight: false, findings: { fatal: [], warnings: [] } },
    ...over,
  };
}
