/**
 * The properties of an EngineDeployment as Pulumi stores and shows them, and as the provider works
 * with them. Shown (and diffed by `pulumi preview --diff`): the deployment's name, its plan (one
 * fact a line, render/plan), the drift found on its nodes, its secrets and connection (each
 * `[secret]`). Carried but never shown: `__bundle`, the whole rendered bundle packed, and `__run`,
 * this run's allowances, preflight findings and gateway file.
 *
 * Stored outputs of any state version are read through ./stateVersion (`fromStored`).
 */
import type { DeploymentBundle } from "../render/types";
import type { StoredOutcome } from "../serve/outcome";
import type { GateState } from "../serve/gatejudge";
import type { ConnectionSettings } from "./settings";
import type { EngineWire, RunSettings } from "./wire";
import { unpack } from "./packed";
import type { Msg } from "../text/messages";
import { stale, upgrade, upgradeWords, type Upgraded } from "./stateVersion";
import { noOlds } from "./common";

/** The form the provider works with. */
export interface EngineProps extends RunSettings {
  deployment: string;
  bundle: DeploymentBundle;
  drift: Msg[];
  secrets: Record<string, string>;
  connection: ConnectionSettings;
  unknown?: Msg[];
  outcome?: StoredOutcome;
  /** The gate's baseline and its last run (./engineGate). */
  gate?: GateState;
  __provider?: string;
  /** Stored outputs of an older state version: the words of their upgrade (the state is rewritten). */
  upgrade?: Msg;
}

/** The olds as the provider works with them: nothing yet (`{}` on a create), or stored outputs of any state version. */
export function oldsFromWire(w: unknown): Partial<EngineProps> {
  return noOlds(w) ? {} : fromStored(w);
}

/** Stored outputs of any state version (or new inputs), in the form the provider works with. */
export function fromStored(w: unknown): EngineProps {
  const u: Upgraded<"EngineDeployment"> = upgrade("EngineDeployment", w);
  const props = fromWire(u.state);
  return stale(u) ? { ...props, upgrade: upgradeWords("EngineDeployment", u) } : props;
}

/** The current stored form (the new inputs, or upgraded outputs) as the provider works with it. */
export function fromWire(w: EngineWire): EngineProps {
  const { __bundle, __run, plan: _plan, stateVersion: _v, drift: _words, ...rest } = w;
  const { drift = [], ...run } = __run;
  return { ...rest, ...run, drift, bundle: unpack<DeploymentBundle>(__bundle) };
}
