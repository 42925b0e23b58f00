/**
 * The work of GatewayFragment, in the provider process. Check and diff are pure: the transport
 * to a gateway node (ssh2) is loaded by the operations that need it, not by the first check of
 * every plan.
 */
import type * as pulumi from "@pulumi/pulumi";
import { disableEndpoints, gatewayFile, type GatewayModel } from "../gateway/file.render";
import { readText, where, writeWhole, type Content, type Place } from "../gateway/edits.serve";
import { sha256 as sha } from "../render/identity";
import { authOf, providerLog, settled, type ResourceProvider } from "./common";
import { msg, say, t, type Msg } from "../text/messages";
import type { GatewayWire } from "./wire";
import { stale, upgrade, upgradeWords } from "./stateVersion";

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("GatewayFragment", s);

function placeOf(p: GatewayWire): Place {
  const f = p.__file;
  const node = p.node !== undefined && f.conn !== undefined ? { name: p.node, conn: f.conn } : undefined;
  return { path: p.path, format: p.format, auth: authOf(p.connection), ...(node !== undefined && { node }) };
}

/**
 * The models the file lists: the deployments as served, and those the site no longer declares but
 * the look still found on their nodes, with their endpoints as the last file listed them, disabled.
 */
export function listed(news: GatewayWire, olds: GatewayWire | undefined): GatewayModel[] {
  const current = news.__file.models;
  const before = olds?.__file.models ?? [];
  const declared = (d: string) => current.some((c) => c.deployment === d);
  const carried = before.filter((m) => news.__file.lingering.includes(m.deployment) && !declared(m.deployment));
  return [...current, ...carried.map((m) => ({ ...m, status: "removed" }))];
}

function render(news: GatewayWire, olds: GatewayWire | undefined): Content & { models: GatewayModel[] } {
  const models = listed(news, olds);
  return { ...gatewayFile(news.format, models, { apiKey: news.__file.apiKey }), models };
}

/** `wrote`: the sha256 of files sm121 wrote (no backup of those; a different old file is kept as one). */
function write(p: Place, c: Content, wrote: ReadonlyArray<string | undefined> = []): Promise<string> {
  return writeWhole(p, c, wrote, providerLog("gateway"));
}

/** Whether this provider process has said why the file waits (Pulumi may diff it more than once). */
let said = false;

/**
 * Pure: why the file is written again, against what was written: the file as the look found it,
 * the engines' starts, the new content. undefined: it is as written. `say`: what the plan says.
 */
function rewrite(olds: GatewayWire, news: GatewayWire): { say?: Msg } | undefined {
  const at = where(placeOf(news));
  const found = news.__file.found;
  if (found !== undefined && olds.sha256 !== undefined && found !== olds.sha256) {
    const change = { where: at, from: olds.sha256.slice(0, 12), to: found.slice(0, 12) };
    return { say: found === "" ? msg("state.gw.removed", { where: at }) : msg("state.gw.changed", change) };
  }
  const served = JSON.stringify(olds.__file.served) !== JSON.stringify(news.__file.served);
  return served || olds.sha256 !== sha(render(news, olds).text) ? {} : undefined;
}

/** Pure: the new content, the file as the look found it, and the engines' starts, against what was written. */
export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const u = stored(oldWire);
  const olds = u.state;
  // Stored inputs of an older version too: a refresh diffs what read found against them.
  const news = stored(wire).state;
  if (olds.path !== news.path || olds.node !== news.node) {
    return { changes: true, replaces: ["path"], deleteBeforeReplace: true };
  }
  const log = providerLog("gateway");
  const f: unknown = news.__file;
  if (typeof f !== "object" || f === null || !Array.isArray((f as GatewayWire["__file"]).models)) {
    if (!said) log(t("serve.gatewayLater"));
    said = true;
    return { changes: true };
  }
  const why = rewrite(olds, news);
  if (why?.say !== undefined) log(say(why.say));
  if (why === undefined && stale(u)) log(say(upgradeWords("GatewayFragment", u)));
  return { changes: why !== undefined || stale(u) };
}

export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const inputs = stored(given).state;
  const c = render(inputs, undefined);
  const sha256 = await write(placeOf(inputs), c);
  return { id: inputs.path, outs: { ...inputs, __file: { ...inputs.__file, models: c.models }, sha256 } };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const news = stored(given).state;
  const olds = stored(oldWire).state;
  const c = render(news, olds);
  const file = { ...news.__file, models: c.models };
  // Only the state's version: the file is as written.
  if (rewrite(olds, news) === undefined) return { outs: { ...news, __file: file, sha256: olds.sha256 } };
  const sha256 = await write(placeOf(news), c, [olds.sha256]);
  return { outs: { ...news, __file: file, sha256 } };
}

/**
 * The file stays, with every endpoint disabled: a removed deployment's endpoint stays, disabled
 * (seed 001). A destroy deletes this before the engines, so they stop after the gateway has left
 * them; an engine whose stop then fails keeps its endpoint, disabled.
 */
export async function remove(_id: string, wire: unknown): Promise<void> {
  const state = stored(wire).state;
  const p = placeOf(state);
  const models = state.__file.models.map((m) => ({ ...m, status: "destroyed" }));
  const restartNote = msg("state.gw.destroyed");
  const c: Content =
    models.length > 0
      ? { ...gatewayFile(p.format, models, { apiKey: state.__file.apiKey }), restartNote }
      : { text: disableEndpoints(p.format, await readText(p), "all", "destroyed").text, warnings: [], restartNote };
  await write(p, c, [state.sha256]);
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const state = stored(wire).state;
  return { id, props: { ...state, sha256: sha(await readText(placeOf(state))) } };
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
