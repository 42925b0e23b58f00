/**
 * The work of ScrapeTargets, in the provider process. Check and diff are pure; the transport to a
 * node is loaded by the operations that write, remove or read the file (serve/sitefile).
 */
import type * as pulumi from "@pulumi/pulumi";
import { sha256 as sha } from "../render/identity";
import { placeName, readPlaced, removePlaced, writePlaced, type Placed } from "../serve/sitefile";
import { authOf, providerLog, settled, type ResourceProvider } from "./common";
import { msg, say, t, type Msg } from "../text/messages";
import type { ScrapeTargetsWire } from "./wire";
import { stale, upgrade, upgradeWords } from "./stateVersion";

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("ScrapeTargets", s);

const placed = (p: ScrapeTargetsWire): Placed => ({
  path: p.path,
  ...(p.node !== undefined && p.__file.conn !== undefined && { node: { name: p.node, conn: p.__file.conn } }),
});

/** Why the file on its node is not what was written, as the plan-time look found it. */
export function lookDrift(olds: ScrapeTargetsWire, news: ScrapeTargetsWire): Msg | undefined {
  const found = news.__file.found;
  if (!("sha256" in found) || found.sha256 === olds.sha256) return undefined;
  const where = placeName(placed(news));
  if (found.sha256 === null) return msg("state.scrapeGone", { where });
  const [now, written] = [found.sha256.slice(0, 12), (olds.sha256 ?? "-").slice(0, 12)];
  return msg("state.scrapeChanged", { where, now, written });
}

/** Whether this provider process has said why the file is rewritten (Pulumi may diff it more than once). */
let said = false;

/** Pure: whether the file is written again (edited or gone on its node, or new content). */
const rewrite = (olds: ScrapeTargetsWire, news: ScrapeTargetsWire): boolean =>
  lookDrift(olds, news) !== undefined || olds.sha256 !== sha(news.__file.content);

export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const u = stored(oldWire);
  const olds = u.state;
  const news = stored(wire).state;
  if (olds.path !== news.path || olds.node !== news.node)
    return { changes: true, replaces: ["path"], deleteBeforeReplace: true };
  const drift = lookDrift(olds, news);
  if (drift !== undefined && !said) providerLog("scrape targets")(say(drift));
  said ||= drift !== undefined;
  const changes = rewrite(olds, news);
  if (!changes && stale(u)) providerLog("scrape targets")(say(upgradeWords("ScrapeTargets", u)));
  return { changes: changes || stale(u) };
}

async function write(p: ScrapeTargetsWire, written: string | undefined): Promise<string> {
  const log = providerLog("scrape targets");
  for (const w of p.__file.warnings) log(t("serve.warning", { warning: say(w) }));
  const content = p.__file.content;
  const known = [sha(content), ...(written === undefined ? [] : [written])];
  const kept = await writePlaced(placed(p), authOf(p.connection), content, known, "write the scrape targets");
  if (kept !== undefined) log(t("serve.scrapeKept", { where: placeName({ ...placed(p), path: kept }) }));
  const groups = (JSON.parse(content) as unknown[]).length;
  log(t("serve.scrapeWrote", { count: groups, where: placeName(placed(p)) }));
  return sha(content);
}

export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const inputs = stored(given).state;
  return { id: placeName(placed(inputs)), outs: { ...inputs, sha256: await write(inputs, undefined) } };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const news = stored(given).state;
  const olds = stored(oldWire).state;
  // Only the state's version: the file is as written.
  if (!rewrite(olds, news)) return { outs: { ...news, ...(olds.sha256 !== undefined && { sha256: olds.sha256 }) } };
  return { outs: { ...news, sha256: await write(news, olds.sha256) } };
}

export async function remove(_id: string, wire: unknown): Promise<void> {
  const state = stored(wire).state;
  await removePlaced(placed(state), authOf(state.connection), "remove the scrape targets");
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const state = stored(wire).state;
  const text = await readPlaced(placed(state), authOf(state.connection), "read the scrape targets");
  return { id, props: { ...state, sha256: sha(text ?? "") } };
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
