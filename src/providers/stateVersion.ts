/**
 * The state versions of sm121's dynamic resources: the one place that knows every shape each kind
 * of resource has stored its outputs in, and turns any of them into the current one.
 *
 * Every output this build writes carries `stateVersion` (ShimResource sets it from
 * STATE_VERSIONS). Each provider operation that reads stored outputs (check, diff, update,
 * delete, read) reads them through `upgrade`, so a stack written by an earlier release is diffed,
 * refreshed and destroyed by this release's code, and its first `pulumi up` rewrites it at the
 * current version: the diff reports the upgrade as a change of its own, which touches no node.
 * A version number is a shape; a state written by a newer sm121 is refused, never guessed at.
 *
 * States written before versions existed carry none: `unversioned` recognizes their release by the
 * shape it wrote, once, here. test/fixtures/state holds a real stack of each release.
 *
 * | kind             | 1                           | 2                         | 3                    | 4             |
 * | ---------------- | --------------------------- | ------------------------- | -------------------- | ------------- |
 * | EngineDeployment | 9492e6f: bundle as `bundle` | 057f8f4: `__bundle`       | a216b46: failure msg | now: findings |
 * | DgppProvision    | 9492e6f: bundle as `bundle` | 057f8f4, now: `__bundle`  |                      |               |
 * | GatewayFragment  | 9492e6f: text as `content`  | 057f8f4: `__file.content` | now: `__file.models` |               |
 * | ModelCache       | 057f8f4, now                |                           |                      |               |
 * | ImageSync        | 057f8f4, now                |                           |                      |               |
 * | ScrapeTargets    | 5944e4e: English warnings   | now: warnings messages    |                      |               |
 * | HostCommand      | 9492e6f (deleted since)     |                           |                      |               |
 * | Surge            | now                         |                           |                      |               |
 *
 * EngineDeployment 3: `outcome.failure` is a message key and its arguments (src/text/messages,
 * area state), said in the reader's language; version 2 wrote English words there.
 * EngineDeployment 4: what the plan-time look found (`drift`, `unknown`, `__run.findings`,
 * `__run.health`, `outcome.restarts[].causes`) and the outcome's warnings are messages too;
 * version 3 wrote English words.
 * EngineDeployment 5: the shown `drift` is the findings' English words again (what the diff shows,
 * in place of message keys), their messages in `__run.drift`.
 * EngineDeployment 6: the outputs may carry the gate's baseline (`gate`), and each node of the
 * outcome the image it runs by digest (`image`) and where its time to ready went (`ready`); a
 * version 5 state has none of them yet, and reads as it is.
 */
import { z } from "zod";
import type { DgppPaths } from "../dgpp/files.render";
import { stagedLines } from "../dgpp/files.render";
import type { DeploymentBundle, NodeConn } from "../render/types";
import type { DeploymentOutcome, StoredOutcome } from "../serve/outcome";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./settings";
import type { RunSettings } from "./wire";
import { msg, say, t, type Msg } from "../text/messages";
import { pack } from "./packed";
import type {
  DgppWire,
  EngineWire,
  GatewayWire,
  ImageSyncWire,
  ModelCacheWire,
  ScrapeTargetsWire,
  SurgeWire,
} from "./wire";

/** Each kind's current version: what this build writes. */
export const STATE_VERSIONS = {
  EngineDeployment: 6,
  DgppProvision: 2,
  GatewayFragment: 3,
  ModelCache: 1,
  ImageSync: 1,
  ScrapeTargets: 2,
  HostCommand: 1,
  Surge: 1,
} as const satisfies Record<string, number>;

export type StateKind = keyof typeof STATE_VERSIONS;

/** The hook resource of 9492e6f, as its state holds it: only its delete runs now. */
export interface HostCommandWire {
  node: string;
  stateVersion?: number;
}

/** The current stored form of each kind. */
export interface StateShapes {
  EngineDeployment: EngineWire;
  DgppProvision: DgppWire;
  GatewayFragment: GatewayWire;
  ModelCache: ModelCacheWire;
  ImageSync: ImageSyncWire;
  ScrapeTargets: ScrapeTargetsWire;
  HostCommand: HostCommandWire;
  Surge: SurgeWire;
}

type Props = Record<string, unknown>;

/** EngineDeployment 1 (9492e6f): the bundle and this run's settings side by side. */
interface EngineV1 {
  deployment?: string;
  bundle: DeploymentBundle;
  drift?: string[];
  secrets?: Record<string, string>;
  connection: ConnectionSettings;
  allow?: Allowances;
  preflight?: boolean;
  findings?: { fatal: string[]; warnings: string[] };
  gateway?: GatewaySettings;
  outcome?: EngineV2["outcome"];
  __provider?: string;
}

/** The outcome's warnings and health restarts as versions 1 to 3 recorded them: in English words. */
interface WordsOutcome {
  warnings: string[];
  restarts?: Array<{ at: string; causes: string[] }>;
}

/** EngineDeployment 4: the look's findings as messages, shown as such. */
type EngineV4 = Omit<EngineWire, "drift" | "__run"> & { drift: Msg[]; __run: Omit<RunSettings, "drift"> };

/** EngineDeployment 3 (a216b46): the look's findings in English words. */
type EngineV3 = Omit<EngineWire, "drift" | "unknown" | "__run" | "outcome"> & {
  drift: string[];
  unknown?: string[];
  __run: Omit<RunSettings, "findings" | "health"> & {
    findings: { fatal: string[]; warnings: string[]; notes?: string[] };
    health?: string[];
  };
  outcome?: Omit<StoredOutcome, "warnings" | "restarts"> & WordsOutcome;
};

/** EngineDeployment 2 (057f8f4): the outcome's failure in English words too. */
type EngineV2 = Omit<EngineV3, "outcome"> & {
  outcome?: Omit<DeploymentOutcome, "warnings" | "restarts"> & WordsOutcome;
};

/** ScrapeTargets 1 (5944e4e): the warnings in English words. */
type ScrapeV1 = Omit<ScrapeTargetsWire, "__file"> & {
  __file: Omit<ScrapeTargetsWire["__file"], "warnings"> & { warnings: string[] };
};

/** DgppProvision 1 (9492e6f): the bundle nested. */
type DgppV1 = Omit<DgppWire, "__bundle" | "staged"> & { bundle: DeploymentBundle; paths: DgppPaths };

/** GatewayFragment 1 (9492e6f): the text rendered in the program, the node as an object. */
interface GatewayV1 {
  path: string;
  format: GatewayWire["format"];
  content: string;
  node?: { name: string; conn: NodeConn };
  connection: ConnectionSettings;
  sha256?: string;
  __provider?: string;
}

/** GatewayFragment 2 (057f8f4): the text under `__file`, beside the engines' starts. */
type GatewayV2 = Omit<GatewayWire, "__file"> & {
  __file: { content: string; warnings: string[]; restartNote: string; served: string[]; conn?: NodeConn };
};

const has = (p: Props, key: string, type: "object" | "string"): boolean => typeof p[key] === type && p[key] !== null;

/** The version of a state without `stateVersion`, from the shape its release wrote; undefined: none known. */
const UNVERSIONED: { [K in StateKind]: (p: Props) => number | undefined } = {
  // Version 3 has always carried stateVersion: an unversioned `__bundle` is version 2's.
  EngineDeployment: (p) => (has(p, "__bundle", "string") ? 2 : has(p, "bundle", "object") ? 1 : undefined),
  DgppProvision: (p) => (has(p, "__bundle", "string") ? 2 : has(p, "bundle", "object") ? 1 : undefined),
  GatewayFragment: (p) => (has(p, "__file", "object") ? 2 : has(p, "content", "string") ? 1 : undefined),
  ModelCache: (p) => (has(p, "repo", "string") ? 1 : undefined),
  ImageSync: (p) => (has(p, "image", "string") ? 1 : undefined),
  ScrapeTargets: (p) => (has(p, "__file", "object") ? 1 : undefined),
  HostCommand: (p) => (has(p, "node", "string") ? 1 : undefined),
  Surge: (p) => (has(p, "phase", "string") ? 1 : undefined),
};

/** The upgrade from version n to n + 1, by n. */
const STEPS: { [K in StateKind]: Record<number, (p: Props) => Props> } = {
  EngineDeployment: {
    1: (p) => {
      const l = p as unknown as EngineV1;
      const wire: Omit<EngineV2, "stateVersion"> = {
        deployment: l.deployment ?? l.bundle.deployment,
        // Shown by the plan only; the next up writes this build's.
        plan: "",
        drift: l.drift ?? [],
        secrets: l.secrets ?? {},
        connection: l.connection,
        __bundle: pack(l.bundle),
        __run: {
          allow: l.allow ?? { protected: [], experimental: false, restart: false },
          preflight: l.preflight ?? false,
          findings: l.findings ?? { fatal: [], warnings: [] },
          ...(l.gateway !== undefined && { gateway: l.gateway }),
        },
        ...(l.outcome !== undefined && { outcome: l.outcome }),
        ...(l.__provider !== undefined && { __provider: l.__provider }),
      };
      return { ...wire };
    },
    // The failure an older sm121 wrote in English is kept, whole, as a recorded text: its words
    // are not guessed back into a message.
    2: (p) => {
      const { outcome, ...rest } = p as unknown as EngineV2;
      if (outcome === undefined) return rest;
      const { failure, ...kept } = outcome;
      const stored: EngineV3["outcome"] =
        failure === undefined ? kept : { ...kept, failure: msg("state.recorded", { text: failure }) };
      return { ...rest, outcome: stored };
    },
    // The look's findings an older sm121 wrote in English are kept, each whole, as recorded texts.
    3: (p) => {
      const { drift, unknown, __run: run, outcome, ...rest } = p as unknown as EngineV3;
      const recorded = (words: readonly string[]): Msg[] => words.map((text) => msg("state.recorded", { text }));
      const { findings, health, ...settings } = run;
      const __run: RunSettings = {
        ...settings,
        findings: {
          fatal: recorded(findings.fatal),
          warnings: recorded(findings.warnings),
          ...(findings.notes !== undefined && { notes: recorded(findings.notes) }),
        },
        ...(health !== undefined && { health: recorded(health) }),
      };
      let stored: StoredOutcome | undefined;
      if (outcome !== undefined) {
        const { warnings, restarts, ...kept } = outcome;
        const counted = restarts?.map((r) => ({ at: r.at, causes: recorded(r.causes) }));
        stored = { ...kept, warnings: recorded(warnings), ...(counted !== undefined && { restarts: counted }) };
      }
      const wire: Omit<EngineV4, "stateVersion"> = {
        ...rest,
        drift: recorded(drift),
        __run,
        ...(unknown !== undefined && { unknown: recorded(unknown) }),
        ...(stored !== undefined && { outcome: stored }),
      };
      return { ...wire };
    },
    // The findings' messages move under __run; the shown drift says them in English.
    4: (p) => {
      const { drift, __run: run, ...rest } = p as unknown as EngineV4;
      const wire: Omit<EngineWire, "stateVersion"> = {
        ...rest,
        drift: drift.map((m) => say(m, "en")),
        __run: { ...run, ...(drift.length > 0 && { drift }) },
      };
      return { ...wire };
    },
    // Fields only added (the gate, the nodes' image digests and start phases): nothing to convert.
    5: (p) => p,
  },
  DgppProvision: {
    1: (p) => {
      const { bundle, ...rest } = p as unknown as DgppV1;
      return { ...rest, staged: stagedLines(bundle, rest.paths), __bundle: pack(bundle) };
    },
  },
  GatewayFragment: {
    1: (p) => {
      const { content, node, ...rest } = p as unknown as GatewayV1;
      const conn = node !== undefined ? { conn: node.conn } : {};
      const file: GatewayV2["__file"] = { content, warnings: [], restartNote: "", served: [], ...conn };
      return { ...rest, ...(node !== undefined && { node: node.name }), endpoints: "", __file: file };
    },
    // The text is on the node and its sha256 in the state; the models it was rendered from were
    // never stored: none (a delete disables every endpoint of the file as it is).
    2: (p) => {
      const { __file: f, ...rest } = p as unknown as GatewayV2;
      const conn = f.conn !== undefined ? { conn: f.conn } : {};
      const file: GatewayWire["__file"] = { models: [], apiKey: false, lingering: [], served: f.served, ...conn };
      return { ...rest, __file: file };
    },
  },
  ModelCache: {},
  ImageSync: {},
  // The warnings an older sm121 wrote in English are kept whole, as recorded texts.
  ScrapeTargets: {
    1: (p) => {
      const { __file: f, ...rest } = p as unknown as ScrapeV1;
      return { ...rest, __file: { ...f, warnings: f.warnings.map((text) => msg("state.recorded", { text })) } };
    },
  },
  HostCommand: {},
  Surge: {},
};

export interface Upgraded<K extends StateKind> {
  /** The stored outputs in the current form, carrying the current stateVersion. */
  state: StateShapes[K];
  /** The version they were stored in. */
  from: number;
  /** Whether they carried it (false: written before state versions). */
  versioned: boolean;
}

/** Whether the state must be written again: an older version, or none recorded. */
export const stale = (u: Upgraded<StateKind>): boolean => !u.versioned || u.from !== u.state.stateVersion;

/** What the plan says of an upgrade, under the resource. */
export function upgradeWords(kind: StateKind, u: Upgraded<StateKind>): Msg {
  const params = { kind, from: u.from, to: STATE_VERSIONS[kind] };
  return msg(u.versioned ? "serve.stateUpgrade" : "serve.stateUpgradeUnversioned", params);
}

/**
 * What the engine passes in, read before any version's shape: an object whose stateVersion, where
 * there is one, is a whole number (a state written before versions has none). Made when used: no
 * zod schema at a provider file's module scope (DESIGN.md).
 */
const storedSchema = () => z.looseObject({ stateVersion: z.int().min(1).optional() });

/** The stored outputs of a `kind` resource, in the current form. */
export function upgrade<K extends StateKind>(kind: K, stored: unknown): Upgraded<K> {
  const parsed = storedSchema().safeParse(stored);
  if (!parsed.success) {
    const keys = typeof stored === "object" && stored !== null ? Object.keys(stored).sort().join(", ") : typeof stored;
    throw new Error(t("serve.stateUnknownShape", { kind, keys }));
  }
  const props: Props = parsed.data;
  const current: number = STATE_VERSIONS[kind];
  const v = parsed.data.stateVersion;
  const versioned = v !== undefined;
  const from = v ?? UNVERSIONED[kind](props);
  const keys = Object.keys(props)
    .filter((k) => k !== "__provider")
    .sort()
    .join(", ");
  if (from === undefined) {
    throw new Error(t("serve.stateUnknownShape", { kind, keys }));
  }
  if (from > current) {
    throw new Error(t("serve.stateNewer", { kind, from, current }));
  }
  let state = props;
  for (let n = from; n < current; n++) {
    const step = STEPS[kind][n];
    if (step === undefined) throw new Error(`sm121 ${kind}: no upgrade from state version ${n}`);
    state = step(state);
  }
  return { state: { ...state, stateVersion: current } as unknown as StateShapes[K], from, versioned };
}
