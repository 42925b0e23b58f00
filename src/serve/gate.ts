/**
 * The gate's load (a recipe's `[gate]`): `sm121 bench`'s client (./loadclient), run from the
 * machine that runs Pulumi against the API node of a deployment the up has just restarted, with
 * sm121's fixed prompts (./gateprompts). It measures the output tokens per second of the whole
 * run and the median time to first token; ./gatejudge compares them with the baseline.
 */
import { withHosts, hostFor, type SshAuth } from "../remote";
import type { RecipeGate } from "../recipe/gate";
import { readApiKeyLines } from "../render/apikey";
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { firstRecord, printRecord } from "../protocol";
import { msg, SaidError } from "../text/messages";
import { GATE_PROMPT_SET, gatePrompt } from "./gateprompts";
import type { GateLoad, GateMeasure } from "./gatejudge";
import { getModels, runLoad } from "./loadclient";
import { percentile } from "./loadstats";
import { keyFiles } from "./readiness";

/** The node the gate measures: the first that answers the API (rank 0 where it does). */
export function gateNode(b: DeploymentBundle): NodeBundle | undefined {
  return b.nodes.find((n) => n.api !== undefined);
}

export function gateLoad(spec: RecipeGate): GateLoad {
  const { requests, concurrency, promptTokens, maxTokens } = spec;
  return { requests, concurrency, promptTokens, maxTokens, prompts: GATE_PROMPT_SET };
}

/** The key the node keeps (a script recipe's .env), read where the engine reads it. */
async function keyOnNode(nb: NodeBundle, auth: SshAuth): Promise<string | undefined> {
  return withHosts([nb], auth, async (hosts) => {
    const record = printRecord("benchKey", '"key64":"%s"', `"$(printf '%s' "$key" | base64 -w0)"`);
    const res = await hostFor(hosts, nb.node).run(`${readApiKeyLines(keyFiles(nb))}\n${record}`, {
      step: "gate: the API key",
      allowFailure: true,
      timeoutMs: 30_000,
    });
    const k = Buffer.from(firstRecord(res.records, "benchKey")?.key64 ?? "", "base64").toString("utf8");
    return k === "" ? undefined : k;
  });
}

export interface GateRun {
  measure: Omit<GateMeasure, "identity" | "digest">;
  /** Requests that failed (an error, no [DONE]), with the first few reasons. */
  errors: number;
  samples: string[];
}

/**
 * Runs the load against the deployment's API node. Throws (SaidError) when the endpoint cannot be
 * reached or refuses the key; failed requests are counted, for the caller to judge.
 */
export async function runGate(
  b: DeploymentBundle,
  spec: RecipeGate,
  o: { apiKey?: string | undefined; auth: SshAuth },
): Promise<GateRun> {
  const nb = gateNode(b);
  const url = nb?.api?.url;
  if (nb === undefined || url === undefined) throw new SaidError(msg("serve.gate.noApi", { deployment: b.deployment }));
  let key = o.apiKey;
  let models = await getModels(url, key);
  if (models.code === 401 && key === undefined) {
    key = await keyOnNode(nb, o.auth);
    if (key !== undefined) models = await getModels(url, key);
  }
  if (models.code !== 200) {
    const error = models.error ?? String(models.code);
    throw new SaidError(msg("serve.gate.unreachable", { deployment: b.deployment, url, error }));
  }
  const model = b.readiness.servedName ?? models.ids[0] ?? "";
  const load = gateLoad(spec);
  const r = await runLoad({
    urls: [url],
    model,
    ...(key !== undefined && { apiKey: key }),
    concurrency: spec.concurrency,
    requests: spec.requests,
    promptTokens: spec.promptTokens,
    maxTokens: spec.maxTokens,
    timeoutMs: 300_000,
    prompt: (i) => gatePrompt(i, spec.promptTokens),
  });
  const s = r.durationMs / 1000;
  const measure = {
    tokensPerS: s > 0 ? Math.round((r.outputTokens / s) * 10) / 10 : 0,
    ttftMs: Math.round(percentile(r.ttft.sorted(), 50) * 10) / 10,
    durationS: Math.round(s * 100) / 100,
    load,
    at: new Date().toISOString(),
    node: nb.node,
  };
  return { measure, errors: r.errors, samples: r.errorSamples };
}
