/**
 * RunInputs: everything a run reads from its environment and its stack besides the site, read once,
 * before any node is seen, and refused there when it cannot be right. The per-run allowances of
 * the specifications (`--yes` on a protected node, `--restart`, `--experimental`, `--timeout-s`,
 * `--min-mem-gib`) are SM121_* variables here (docs/up.md); planSite reads them from this value only.
 */
import type { Allowances } from "../providers/settings";
import { readOverrides } from "../render/overrides";
import type { Owner } from "../serve/owner";
import { t } from "../text/messages";
import { allowedProtected } from "../text/protected";

export interface RunInputs {
  /** The stack: its file is Pulumi.<stack>.yaml. */
  stack: string;
  /** `pulumi preview` (a plan), not `pulumi up`. */
  dryRun: boolean;
  /** The stack this run serves for, recorded on every node it serves (serve/owner). */
  owner: Owner;
  /**
   * SM121_ALLOW_PROTECTED, SM121_EXPERIMENTAL=1, SM121_RESTART=1, SM121_ALLOW_TAKEOVER, and the
   * overrides SM121_TIMEOUT_S and SM121_MIN_MEM_GIB.
   */
  allow: Allowances;
  /** SM121_DOWN (`sm121 down <deployment>`): deployments this run leaves out, as if the site did not list them. */
  down: string[];
  /** SM121_ALLOW_UNFIT: the nodes where a deployment that does not fit in memory may start anyway (`1`: all). */
  unfit: string[];
  /** SM121_ROLL=all: this run restarts every set of replicas at once. */
  rollAll: boolean;
  /** Which of the stack's secrets are set (sm121:apiKey, sm121:hfToken); their values stay out of the plan. */
  secrets: { apiKey: boolean; hfToken: boolean };
}

/** Where a run stands, as the program knows it from Pulumi. */
export interface RunPlace {
  stack: string;
  dryRun: boolean;
  owner: Owner;
  secrets: { apiKey: boolean; hfToken: boolean };
}

/** A comma-separated list of names. */
function list(v: string | undefined): string[] {
  return (v ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * The run's inputs, or why they are refused: an SM121_DOWN deployment the site does not declare
 * (`deployments`), an override out of its range, an SM121_ROLL that is neither `one` nor `all`.
 */
export function readRunInputs(
  env: Readonly<Record<string, string | undefined>>,
  at: RunPlace,
  deployments: readonly string[],
): RunInputs | { refused: string } {
  const down = list(env["SM121_DOWN"]);
  const unknown = down.find((d) => !deployments.includes(d));
  if (unknown !== undefined)
    return { refused: t("serve.downUnknown", { deployment: unknown, deployments: deployments.join(", ") }) };
  let overrides;
  try {
    overrides = readOverrides(env);
  } catch (e) {
    return { refused: e instanceof Error ? e.message : String(e) };
  }
  const roll = env["SM121_ROLL"] ?? "one";
  if (roll !== "one" && roll !== "all") return { refused: t("serve.rollUnknown", { roll }) };
  const allow: Allowances = {
    protected: allowedProtected(env),
    experimental: env["SM121_EXPERIMENTAL"] === "1",
    restart: env["SM121_RESTART"] === "1",
    takeover: list(env["SM121_ALLOW_TAKEOVER"]),
  };
  // Left out when none is set: the engines' stored inputs stay as they were.
  if (Object.keys(overrides).length > 0) allow.overrides = overrides;
  return { ...at, allow, down, unfit: list(env["SM121_ALLOW_UNFIT"]), rollAll: roll === "all" };
}
