/**
 * The work of GatewayFragment, in the provider process. Check and diff are pure: the transport
 * to a gateway node (ssh2) is loaded by the operations that need it, not by the first check of
 * every plan.
 */
import type * as pulumi from "@pulumi/pulumi";
import type { GatewayFormat } from "../recipe/types";
import { disableEndpoints, gatewayFile, type GatewayModel } from "../render/gateway";
import type { NodeConn } from "../render/types";
import { sha256 as sha } from "../render/identity";
import { readPlaced, writePlaced } from "../serve/sitefile";
import { authOf, providerLog, settled, type ResourceProvider } from "./common";
import type { ConnectionSettings, GatewaySettings } from "./settings";
import { msg, say, t, type Msg } from "../text/messages";
import type { GatewayWire, SurgeFile } from "./wire";
import { stale, upgrade, upgradeWords } from "./stateVersion";

/** Where the file is, and how to reach it. */
interface Place {
  path: string;
  format: GatewayFormat;
  node?: { name: string; conn: NodeConn };
  connection: ConnectionSettings;
}

/**
 * The file to write: its text, and what to say. The text is the same bytes in every language (the
 * reasons in it are English, render/gateway), so that operators with different locales see no
 * drift; the warnings and the note are said in the operator's.
 */
interface Content {
  text: string;
  warnings: string[];
  restartNote: Msg;
}

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("GatewayFragment", s);

function placeOf(p: GatewayWire): Place {
  const f = p.__file;
  const node = p.node !== undefined && f.conn !== undefined ? { name: p.node, conn: f.conn } : undefined;
  return { path: p.path, format: p.format, connection: p.connection, ...(node !== undefined && { node }) };
}

const where = (p: Place): string => `${p.node === undefined ? "" : `${p.node.name}:`}${p.path}`;

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

/** `wrote`: the sha256 of files sm121 wrote (no backup of those). */
async function write(p: Place, c: Content, wrote: ReadonlyArray<string | undefined> = []): Promise<string> {
  const log = providerLog("gateway");
  for (const w of c.warnings) log(t("serve.warning", { warning: w }));
  // A different old file is kept as a backup (what the gateway ran with until it restarts).
  const known = [sha(c.text), ...wrote.filter((x): x is string => x !== undefined)];
  await writePlaced(p, authOf(p.connection), c.text, known, "write the gateway file");
  log(t("serve.gatewayWrote", { format: p.format, where: where(p), note: say(c.restartNote) }));
  return sha(c.text);
}

/** The file as it is ("" when it does not exist). */
async function current(p: Place): Promise<string> {
  return (await readPlaced(p, authOf(p.connection), "read the gateway file")) ?? "";
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
      : { text: disableEndpoints(p.format, await current(p), "all", "destroyed").text, warnings: [], restartNote };
  await write(p, c, [state.sha256]);
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const state = stored(wire).state;
  return { id, props: { ...state, sha256: sha(await current(placeOf(state))) } };
}

/** The failure path of a serve: the deployment's endpoints disabled in the file now. */
export async function disableInGateway(
  g: GatewaySettings,
  connection: ConnectionSettings,
  deployment: string,
  nodes: readonly string[],
): Promise<void> {
  const p: Place = { path: g.path, format: g.format, connection, ...(g.node !== undefined && { node: g.node }) };
  const text = await current(p);
  if (text === "") return;
  const disabled = disableEndpoints(
    g.format,
    text,
    nodes.map((node) => ({ deployment, node })),
    "failed",
  );
  const restartNote = msg("state.gw.failed", { deployment });
  // The file as it is now is kept in what it becomes (only the deployment's entries change): no backup.
  await write(p, { text: disabled.text, warnings: disabled.warnings, restartNote }, [sha(text)]);
}

/** A replica's entries disabled for its restart in a roll: the file before, and as written. */
export interface Held {
  place: Place;
  deployment: string;
  before: string;
  written: string;
}

/**
 * A replica of a roll, before its engine stops: its endpoints disabled in the file (the others
 * stay as they are), so that a gateway that reads the file again sends it nothing while it
 * restarts. undefined: there is no file yet.
 */
export async function holdInGateway(
  g: GatewaySettings,
  connection: ConnectionSettings,
  deployment: string,
  nodes: readonly string[],
): Promise<Held | undefined> {
  const place: Place = { path: g.path, format: g.format, connection, ...(g.node !== undefined && { node: g.node }) };
  const before = await current(place);
  if (before === "") return undefined;
  const disabled = disableEndpoints(
    g.format,
    before,
    nodes.map((node) => ({ deployment, node })),
    "restarting",
  );
  const restartNote = msg("state.gw.rollHold", { deployment });
  await write(place, { text: disabled.text, warnings: disabled.warnings, restartNote }, [sha(before)]);
  return { place, deployment, before, written: disabled.text };
}

/**
 * The replica answers again: the file as it was before its restart, when nothing else wrote it
 * since (otherwise the up's gateway resource writes it whole at the end of the run).
 */
export async function releaseInGateway(h: Held): Promise<void> {
  const now = await current(h.place);
  const log = providerLog(h.deployment);
  if (sha(now) !== sha(h.written)) {
    log(t("serve.gatewayChanged", { where: where(h.place) }));
    return;
  }
  const restartNote = msg("state.gw.rollRelease", { deployment: h.deployment });
  await write(h.place, { text: h.before, warnings: [], restartNote }, [sha(h.written)]);
}

/** The surge answers: its endpoints added to the file beside the replicas'. undefined: no file yet. */
export async function surgeInGateway(
  g: GatewaySettings,
  connection: ConnectionSettings,
  model: GatewayModel,
  apiKey: boolean,
): Promise<SurgeFile | undefined> {
  const place: Place = { path: g.path, format: g.format, connection, ...(g.node !== undefined && { node: g.node }) };
  const before = await current(place);
  if (before === "") return undefined;
  const { addEndpoints } = await import("../render/gatewaySurge");
  const written = addEndpoints(g.format, before, model, { apiKey });
  const restartNote = msg("state.gw.surge", { deployment: model.deployment, model: model.model });
  await write(place, { text: written, warnings: [], restartNote }, [sha(before)]);
  return { before, written };
}

/**
 * The roll is over: the file as it was before the surge, when nothing else wrote it since;
 * otherwise the surge's endpoints disabled in it as it is.
 */
export async function endSurgeInGateway(
  g: GatewaySettings,
  connection: ConnectionSettings,
  f: SurgeFile,
  deployment: string,
  nodes: readonly string[],
): Promise<void> {
  const place: Place = { path: g.path, format: g.format, connection, ...(g.node !== undefined && { node: g.node }) };
  const now = await current(place);
  if (sha(now) !== sha(f.written)) {
    // Written since by another (a replica's hold restores what it found): the surge's entries, if
    // still there, disabled.
    const off = disableEndpoints(
      g.format,
      now,
      nodes.map((node) => ({ deployment, node })),
      "ended",
    );
    if (off.text === now) return;
    const note = msg("state.gw.surgeOff", { deployment });
    await write(place, { text: off.text, warnings: off.warnings, restartNote: note }, [sha(now)]);
    return;
  }
  const restartNote = msg("state.gw.surgeEnd", { deployment });
  await write(place, { text: f.before, warnings: [], restartNote }, [sha(f.written)]);
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
