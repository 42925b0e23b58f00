/** The work of EngineDeployment, in the provider process. Inputs arrive as plain JSON. */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import { PreflightFailure, ServeFailure, type DeploymentOutcome } from "../serve/outcome";
import { preflightDeployment, serve } from "../serve/serve";
import { inspectDeployment, stopDeployment } from "../serve/stop";
import type { Allowances, ConnectionSettings, GatewaySettings } from "./engineDeployment";
import { disableInGateway } from "./gatewayImpl";
import { authOf, providerLog } from "./common";

interface Props {
  deployment: string;
  gateway?: GatewaySettings;
  /** Run the read-only node checks at plan time (`sm121:preflight: true` and a preview). */
  preflight?: boolean;
  bundle: DeploymentBundle;
  connection: ConnectionSettings;
  secrets: Record<string, string>;
  allow: Allowances;
  outcome?: DeploymentOutcome;
  __provider?: string;
}


const SHAPE = (b: DeploymentBundle) => JSON.stringify({ nodes: b.nodes.map((n) => n.node), deploy: b.deploy });

/** Would this run restart the deployment? `olds` are the stored outputs (diff) or old inputs (check). */
function changes(olds: Partial<Props>, news: Props): boolean {
  if (news.allow.restart) return true;
  if (olds.bundle?.identity !== news.bundle.identity) return true;
  return olds.outcome !== undefined && olds.outcome.status !== "serving";
}

/** Protected nodes this run would restart without the run's allowance. */
function refusedProtected(news: Props): string[] {
  const b = news.bundle;
  return b.nodes
    .filter((n) => n.protected && !news.allow.protected.includes(n.node))
    .map((n) => `node ${n.node} is protected and this run would restart ${b.deployment} on it; run with SM121_ALLOW_PROTECTED=${n.node} to allow it`);
}

export async function check(olds: Partial<Props>, news: Props): Promise<pulumi.dynamic.CheckResult> {
  const failures: pulumi.dynamic.CheckFailure[] = [];
  const b = news.bundle;
  if (typeof b !== "object" || b === null || !Array.isArray(b.nodes)) return { inputs: news };
  if (!b.runnable) failures.push({ property: "deployment", reason: `profile ${b.profile ?? ""} of ${b.deployment} is render-only (sm121-runnable: false); see it with \`sm121 render ${b.deployment}\`, or remove the deployment` });
  if (b.profileStatus === "experimental" && !news.allow.experimental) failures.push({ property: "deployment", reason: `profile ${b.profile ?? ""} of ${b.deployment} is experimental; run with SM121_EXPERIMENTAL=1 to serve it` });
  // A create or a new bundle is known here; a retry of a failed deployment is caught in diff.
  if (changes(olds, news)) for (const reason of refusedProtected(news)) failures.push({ property: "deployment", reason });
  if (news.preflight === true && failures.length === 0) {
    try {
      for (const w of await preflightDeployment(b, authOf(news.connection))) providerLog(b.deployment)(`warning: ${w}`);
    } catch (e) {
      failures.push({ property: "deployment", reason: e instanceof Error ? e.message : String(e) });
    }
  }
  return { inputs: news, failures };
}

export async function diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
  if (olds.bundle !== undefined && SHAPE(olds.bundle) !== SHAPE(news.bundle)) {
    const refused = refusedProtected(news);
    if (refused.length > 0) throw new Error(refused.join("\n"));
    return { changes: true, replaces: ["bundle"], deleteBeforeReplace: true };
  }
  const change = changes(olds, news);
  const refused = change ? refusedProtected(news) : [];
  if (refused.length > 0) throw new Error(refused.join("\n"));
  return { changes: change };
}

function goBack(olds: Partial<Props> | undefined, news: Props): string {
  const b = news.bundle;
  if (olds?.bundle?.profile !== undefined && olds.bundle.profile !== b.profile) {
    return `set profile: ${olds.bundle.profile} for deployment ${b.deployment} in the stack config and run \`pulumi up\` (the old .env is in the backup above)`;
  }
  if (olds?.bundle !== undefined) return "revert the change to the recipe or the site (e.g. `git checkout -- recipes Pulumi.*.yaml`) and run `pulumi up`; the previous files are in the backups above";
  return `remove deployment ${b.deployment} from the site and run \`pulumi up\`, or \`pulumi destroy\``;
}

async function run(id: string | undefined, olds: Partial<Props> | undefined, news: Props): Promise<pulumi.dynamic.CreateResult> {
  const b = news.bundle;
  const log = providerLog(b.deployment);
  try {
    // A failed or drifted deployment is restarted even when its bundle is the same.
    const unhealthy = olds?.outcome !== undefined && olds.outcome.status !== "serving";
    const outcome = await serve(b, authOf(news.connection), { secrets: news.secrets ?? {}, forceRestart: news.allow.restart || unhealthy, goBack: goBack(olds, news), log });
    for (const w of outcome.warnings) log(`warning: ${w}`);
    return { id: id ?? b.deployment, outs: { ...news, outcome } };
  } catch (e) {
    if (e instanceof ServeFailure) {
      const back = await rollBack(olds, news, e, log);
      if (back !== undefined) {
        throw Object.assign(new Error(back.message, { cause: e }), { id: id ?? b.deployment, properties: { ...news, outcome: back.outcome }, reasons: [back.message] });
      }
      if (news.gateway !== undefined) {
        await disableInGateway(news.gateway, news.connection, b.deployment).catch((err: unknown) => log(`warning: could not disable ${b.deployment} in the gateway file: ${err instanceof Error ? err.message : String(err)}`));
      }
      // An error carrying id and properties is recorded by Pulumi as a failed resource with these outputs.
      throw Object.assign(new Error(e.message, { cause: e }), { id: id ?? b.deployment, properties: { ...news, outcome: e.outcome }, reasons: [e.message] });
    }
    if (e instanceof PreflightFailure) throw new Error(e.message, { cause: e });
    throw e;
  }
}

/**
 * rollback = "auto": a failed readiness restores the previous bundle and starts it again. The up
 * still fails; its message says that it rolled back and what serves now.
 */
async function rollBack(olds: Partial<Props> | undefined, news: Props, e: ServeFailure, log: (m: string) => void): Promise<{ message: string; outcome: DeploymentOutcome } | undefined> {
  const prev = olds?.bundle;
  if (news.bundle.rollback !== "auto" || prev === undefined || prev.identity === news.bundle.identity) return undefined;
  if (!(e.outcome.failure ?? "").startsWith("readiness")) return undefined;
  log(`readiness failed; rolling back to the previous bundle (${prev.profile === undefined ? prev.identity.slice(0, 12) : `profile ${prev.profile}`})`);
  try {
    const restored = await serve(prev, authOf(news.connection), { secrets: news.secrets ?? {}, forceRestart: true, goBack: "", log });
    const where = restored.nodes.flatMap((n) => (n.endpoint === undefined ? [] : [n.endpoint])).join(", ");
    const what = prev.profile === undefined ? `the previous bundle ${prev.identity.slice(0, 12)}` : `the previous profile ${prev.profile}`;
    return {
      message: `${e.message}\nsm121 rolled back (rollback = "auto"): ${prev.deployment} serves ${what} again${where === "" ? "" : ` at ${where}`}${restored.servedModel === undefined ? "" : ` (${restored.servedModel})`}. The new bundle is not serving; fix it and run \`pulumi up\` again.`,
      outcome: { ...e.outcome, status: "failed", rolledBack: true, nodes: restored.nodes, ...(restored.servedModel !== undefined && { servedModel: restored.servedModel }) },
    };
  } catch (err) {
    return { message: `${e.message}\nThe automatic rollback to the previous bundle failed too: ${err instanceof Error ? err.message : String(err)}`, outcome: e.outcome };
  }
}

export function create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
  return run(undefined, undefined, inputs);
}

export async function update(id: string, olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  const r = await run(id, olds, news);
  return { outs: r.outs };
}

export async function remove(_id: string, props: Props): Promise<void> {
  await stopDeployment(props.bundle, authOf(props.connection), providerLog(props.bundle.deployment));
}

export async function read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
  const found = await inspectDeployment(props.bundle, authOf(props.connection));
  // What only a serve can verify (the served name, max_model_len) stays from the last serve.
  const prev = props.outcome;
  const outcome = { ...found, ...(prev?.servedModel !== undefined && { servedModel: prev.servedModel }), ...(prev?.maxModelLen !== undefined && { maxModelLen: prev.maxModelLen }) };
  return { id, props: { ...props, outcome } };
}
