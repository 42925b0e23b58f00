/**
 * The gate of an up (a recipe's `[gate]`), inside EngineDeployment's update: once the serve has
 * restarted the first replica of a set (or the only deployment) onto a new bundle or image, the
 * load runs against it before the roll goes on (serve/gate), and its numbers are judged against
 * the baseline the state keeps (serve/gatejudge). The first run records the baseline; a run within
 * the tolerances becomes the new one; a slower one fails the update (the caller rolls the replica
 * back to the previous bundle), unless `SM121_ACCEPT_SLOWER=<deployment>` accepts it for this run.
 */
import type { SshAuth } from "../remote";
import { ServeFailure, type DeploymentOutcome } from "../serve/outcome";
import { gateChanges, gateRows, judgeGate, nextGateState, sameLoad, shortDigest } from "../serve/gatejudge";
import type { GateMeasure, GateState, GateVerdict } from "../serve/gatejudge";
import { listMsg, msg, say, t, type Msg } from "../text/messages";
import type { EngineProps } from "./engineWire";

/** SM121_ACCEPT_SLOWER of this process: read here, as the provider's environment, so it is no input. */
function acceptedSlower(deployment: string): boolean {
  const list = (process.env["SM121_ACCEPT_SLOWER"] ?? "").split(",").map((s) => s.trim());
  return list.includes(deployment);
}

export interface GateTurn {
  /** What the state keeps of the gate after this up. */
  state?: GateState;
  /** The gate failed: why, said in the reader's language, with the numbers and what changed. */
  failure?: Msg;
}

/** The image digest the gate's node runs, as the serve read it. */
function digestOf(outcome: DeploymentOutcome, node: string): string | undefined {
  return outcome.nodes.find((n) => n.node === node)?.image?.id;
}

/** Whether this up restarted something the baseline does not describe: another bundle or image, or another load. */
function upgraded(base: GateMeasure | undefined, identity: string, digest: string | undefined): boolean {
  if (base === undefined) return true;
  return base.identity !== identity || (digest !== undefined && base.digest !== undefined && digest !== base.digest);
}

const VERDICT_KEYS = {
  baseline: "serve.gate.baseline",
  "new-load": "serve.gate.newLoad",
  passed: "serve.gate.passed",
  accepted: "serve.gate.accepted",
  slower: "serve.gate.passed",
} as const satisfies Record<GateVerdict, string>;

export async function gateAfterServe(a: {
  olds: Partial<EngineProps>;
  news: EngineProps;
  outcome: DeploymentOutcome;
  auth: SshAuth;
  log: (m: string) => void;
}): Promise<GateTurn> {
  const { olds, news, outcome, log } = a;
  const b = news.bundle;
  const spec = b.gate;
  const kept = olds.gate === undefined ? {} : { state: olds.gate };
  const first = news.replica === undefined || news.replica.index === 1;
  if (spec === undefined || !first || !outcome.nodes.some((n) => n.restarted)) return kept;
  const { gateNode, gateLoad, runGate } = await import("../serve/gate");
  const node = gateNode(b)?.node ?? "";
  const digest = digestOf(outcome, node);
  const base = olds.gate?.baseline;
  if (base !== undefined && !upgraded(base, b.identity, digest) && sameLoad(base.load, gateLoad(spec))) {
    log(t("serve.gate.same", { deployment: b.deployment }));
    return kept;
  }
  const d = { deployment: b.deployment, node, requests: spec.requests, concurrency: spec.concurrency };
  log(t("serve.gate.running", { ...d, maxTokens: spec.maxTokens }));
  let run;
  try {
    run = await runGate(b, spec, { apiKey: news.secrets["API_KEY"], auth: a.auth });
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    return { ...kept, failure: msg("serve.gate.couldNotRun", { deployment: b.deployment, why }) };
  }
  const now: GateMeasure = { ...run.measure, identity: b.identity, ...(digest !== undefined && { digest }) };
  const numbers = { tokens: now.tokensPerS.toFixed(1), ttft: String(Math.round(now.ttftMs)), seconds: now.durationS };
  log(t("serve.gate.measured", { deployment: b.deployment, ...numbers }));
  if (run.errors > 0) {
    const failed = { deployment: b.deployment, count: run.errors, requests: spec.requests };
    const failure = msg("serve.gate.requestsFailed", { ...failed, samples: run.samples.slice(0, 3).join("; ") });
    return { state: nextGateState(olds.gate, now, "slower"), failure };
  }
  const verdict = judgeGate(spec, base, now, acceptedSlower(b.deployment));
  const state = nextGateState(olds.gate, now, verdict);
  if (verdict === "accepted" && base !== undefined) for (const r of gateRows(spec, base, now)) log(`  ${say(r)}`);
  if (verdict !== "slower") {
    const digestSaid = digest === undefined ? "-" : shortDigest(digest);
    log(t(VERDICT_KEYS[verdict], { deployment: b.deployment, identity: b.identity.slice(0, 12), digest: digestSaid }));
    return { state };
  }
  const before = base as GateMeasure;
  const changes = gateChanges(olds.bundle, b, { before: before.digest, after: digest });
  const rows = listMsg(gateRows(spec, before, now), "lines");
  const failure = msg("serve.gate.slower", { deployment: b.deployment, node, rows, changes });
  return { state, failure };
}

/**
 * A failed gate as the serve's failure after the readiness (step `gate`): the caller's rollback
 * takes the replica back to the previous bundle. The operator reads it in their language, with
 * how to accept it; the state keeps its first line in English, as every failure's.
 */
export function gateFailed(m: Msg, outcome: DeploymentOutcome, deployment: string): ServeFailure {
  const first = say(m, "en").split("\n")[0] ?? "";
  const failed = { ...outcome, status: "failed" as const, failure: `gate failed: ${first}` };
  return new ServeFailure(`${say(m)}\n${t("serve.gate.accept", { deployment })}`, failed, "gate");
}
