/** The work of Surge (./surge), in the provider process: check and diff are pure. */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import { authOf, providerLog } from "./common";
import { unpack } from "./packed";
import type { SurgeWire } from "./surge";

type Stored = SurgeWire | Record<string, never>;

export async function check(_olds: Stored, news: SurgeWire): Promise<pulumi.dynamic.CheckResult> {
  return { inputs: news };
}

const same = (a: Record<string, string> | undefined, b: Record<string, string>) => JSON.stringify(a) === JSON.stringify(b);

export async function diff(_id: string, olds: Stored, news: SurgeWire): Promise<pulumi.dynamic.DiffResult> {
  const changes = !same("set" in olds ? olds.set : undefined, news.set);
  if (changes && news.phase === "start") {
    const log = providerLog(news.deployment);
    log(news.go
      ? `starts the new recipe on ${news.nodes.join(", ")} before any replica of the set stops`
      : `no surge: ${news.why}`);
  }
  if (changes && news.phase === "end" && news.go) {
    providerLog(news.deployment)(`stops on ${news.nodes.join(", ")} once every replica answers; the spare is free again`);
  }
  return { changes };
}

export async function create(news: SurgeWire): Promise<pulumi.dynamic.CreateResult> {
  return { id: `${news.deployment}-${news.phase}`, outs: { ...news, ...(news.phase === "start" && { started: { started: false } }) } };
}

export async function update(_id: string, _olds: Stored, news: SurgeWire): Promise<pulumi.dynamic.UpdateResult> {
  if (news.phase === "start") return { outs: { ...news, started: await start(news) } };
  await end(news);
  return { outs: news };
}

async function start(w: SurgeWire): Promise<SurgeWire["started"]> {
  const log = providerLog(w.deployment);
  if (!w.go) {
    log(`no surge: ${w.why}; the replicas roll one at a time`);
    return { started: false };
  }
  const b = unpack<DeploymentBundle>(w.__bundle);
  const auth = authOf(w.connection);
  const r = w.__run;
  log(`surge: starts ${w.deployment} on ${w.nodes.join(", ")} with the new recipe; no replica stops before it answers`);
  const { serve } = await import("../serve/serve");
  try {
    const settings = {
      secrets: w.secrets, forceRestart: false, goBack: "", log,
      ...(r.owner !== undefined && { owner: r.owner }),
      ...(r.keepBackups !== undefined && { keepBackups: r.keepBackups }),
    };
    await serve(b, auth, settings);
    if (r.gateway === undefined) return { started: true };
    const { surgeInGateway } = await import("./gatewayImpl");
    const file = await surgeInGateway(r.gateway, w.connection, r.model, r.apiKey);
    log(`surge: ${w.deployment} answers on ${w.nodes.join(", ")}${file === undefined ? "" : " and is in the gateway file"}`);
    return { started: true, ...(file !== undefined && { file }) };
  } catch (e) {
    const why = e instanceof Error ? e.message : String(e);
    log(`warning: the surge on ${w.nodes.join(", ")} failed; the replicas roll one at a time:\n${why}`);
    const { stopDeployment } = await import("../serve/stop");
    await stopDeployment(b, auth, log, w.secrets).catch((err: unknown) => {
      log(`warning: could not stop ${w.deployment} after its failed start: ${err instanceof Error ? err.message : String(err)}`);
    });
    return { started: false };
  }
}

async function end(w: SurgeWire): Promise<void> {
  if (w.start?.started !== true) return;
  const log = providerLog(w.deployment);
  const b = unpack<DeploymentBundle>(w.__bundle);
  const auth = authOf(w.connection);
  const r = w.__run;
  if (r.gateway !== undefined && w.start.file !== undefined) {
    const { endSurgeInGateway } = await import("./gatewayImpl");
    await endSurgeInGateway(r.gateway, w.connection, w.start.file, w.deployment, w.nodes);
  }
  if (r.drain !== undefined) {
    const { drainEngine } = await import("../serve/drain");
    await drainEngine(b, auth, r.drain, log).catch((err: unknown) => {
      log(`warning: could not read ${w.deployment}'s requests in flight: ${err instanceof Error ? err.message : String(err)}`);
    });
  }
  const { stopDeployment } = await import("../serve/stop");
  await stopDeployment(b, auth, log, w.secrets);
  log(`surge: every replica answers with the new recipe; ${w.deployment} stopped, ${w.nodes.join(", ")} is free again`);
}

export async function remove(): Promise<void> {
  // The surge runs only during an up: nothing of it is left on the nodes to remove.
}

export async function read(id: string, props: SurgeWire): Promise<pulumi.dynamic.ReadResult> {
  return { id, props: props as unknown as Record<string, unknown> };
}
