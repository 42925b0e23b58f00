/** The work of Surge (./surge), in the provider process: diff is pure. */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import { authOf, noOlds, providerLog, settled, type ResourceProvider } from "./common";
import { unpack } from "./packed";
import { stale, upgrade, upgradeWords } from "./stateVersion";
import type { SurgeWire } from "./wire";
import { msg, SaidError, say, t } from "../text/messages";

const errorText = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("Surge", s);

const same = (a: Record<string, string> | undefined, b: Record<string, string>) => {
  return JSON.stringify(a) === JSON.stringify(b);
};

/** Both sides may be stored outputs of an older version: a refresh diffs what read found against the stored inputs. */
export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(oldWire, wire));
}

function diffNow(oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  // Olds are empty before the first create.
  const u = noOlds(oldWire) ? undefined : stored(oldWire);
  const news = stored(wire).state;
  // `go`: the plan surges in this run (a replica of the set rolls); otherwise a changed set is recorded.
  const changes = news.go || !same(u?.state.__set, news.__set);
  // Without a surge the plan's line for the set says why already.
  if (changes && news.phase === "start" && news.go) {
    const nodes = news.nodes.join(", ");
    providerLog(news.deployment)(t("surge.plannedStart", { nodes }));
  }
  if (changes && news.phase === "end" && news.go) {
    const nodes = news.nodes.join(", ");
    providerLog(news.deployment)(t("surge.plannedEnd", { nodes }));
  }
  const upgrading = u !== undefined && stale(u);
  if (!changes && upgrading) providerLog(news.deployment)(say(upgradeWords("Surge", u)));
  return { changes: changes || upgrading };
}

/** The first up that has the set's spare: it surges as any other when the plan says so (a replica rolls). */
export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const news = stored(given).state;
  return { id: `${news.deployment}-${news.phase}`, outs: await act(news, undefined) };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: await act(stored(given).state, stored(oldWire).state) };
}

/** What the plan says for this run: surge (`go`), or only record the set (and the state's version). */
async function act(news: SurgeWire, olds: SurgeWire | undefined): Promise<SurgeWire> {
  if (!news.go) {
    const kept = news.phase === "start" ? { started: olds?.started ?? { started: false } } : {};
    return { ...news, ...kept };
  }
  if (news.phase === "start") return { ...news, started: await start(news) };
  await end(news);
  return news;
}

async function start(w: SurgeWire): Promise<SurgeWire["started"]> {
  const log = providerLog(w.deployment);
  const nodes = w.nodes.join(", ");
  const b = unpack<DeploymentBundle>(w.__bundle);
  const auth = authOf(w.connection);
  const r = w.__run;
  log(t("surge.starting", { deployment: w.deployment, nodes }));
  const { serve } = await import("../serve/serve");
  try {
    const settings = {
      secrets: w.secrets,
      forceRestart: false,
      log,
      goBack: t("surge.goBack"),
      failedState: "surge.failedOnSpare" as const,
      ...(r.owner !== undefined && { owner: r.owner }),
      ...(r.keepBackups !== undefined && { keepBackups: r.keepBackups }),
    };
    await serve(b, auth, settings);
    if (r.gateway === undefined) return { started: true };
    const { addSurge, placeOf } = await import("../gateway/steps.serve");
    const listed = await addSurge(placeOf(r.gateway, auth), r.model, r.apiKey, log);
    log(t(listed ? "surge.answersListed" : "surge.answers", { deployment: w.deployment, nodes }));
    return { started: true };
  } catch (e) {
    // The new recipe failed on the spare before any replica stopped: a canary. The roll does not
    // go on to fail on a replica; the set keeps serving the old recipe, whole.
    const { stopDeployment } = await import("../serve/stop");
    const left = await stopDeployment(b, auth, log, w.secrets).then(
      () => undefined,
      (err: unknown) => msg("surge.notStopped", { deployment: w.deployment, why: errorText(err) }),
    );
    const failed = msg("surge.failed", { deployment: w.deployment, nodes, why: errorText(e) });
    throw new SaidError(left === undefined ? failed : msg("serve.withTail", { said: failed, tail: left }), {
      cause: e,
    });
  }
}

async function end(w: SurgeWire): Promise<void> {
  if (w.start?.started !== true) return;
  const log = providerLog(w.deployment);
  const b = unpack<DeploymentBundle>(w.__bundle);
  const auth = authOf(w.connection);
  const r = w.__run;
  if (r.gateway !== undefined) {
    const { dropSurge, placeOf } = await import("../gateway/steps.serve");
    await dropSurge(placeOf(r.gateway, auth), w.deployment, w.nodes, log);
  }
  if (r.drain !== undefined) {
    const { drainEngine } = await import("../serve/drain");
    await drainEngine(b, auth, r.drain, log).catch((err: unknown) => {
      log(t("state.drainFailed", { deployment: w.deployment, why: errorText(err) }));
    });
  }
  const { stopDeployment } = await import("../serve/stop");
  await stopDeployment(b, auth, log, w.secrets);
  log(t("surge.ended", { deployment: w.deployment, nodes: w.nodes.join(", ") }));
}

/**
 * A surge that started and whose end never ran (a replica failed, the up was interrupted) may still
 * run on the spare: its `start` stops it there, so that nothing the state forgets still runs.
 */
export async function remove(_id: string, wire: unknown): Promise<void> {
  const props = stored(wire).state;
  if (props.phase !== "start" || props.started?.started !== true) return;
  const log = providerLog(props.deployment);
  const { stopDeployment } = await import("../serve/stop");
  await stopDeployment(unpack<DeploymentBundle>(props.__bundle), authOf(props.connection), log, props.secrets);
}

export function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  return settled(() => ({ id, props: stored(wire).state }));
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
