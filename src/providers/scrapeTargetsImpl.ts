/**
 * The work of ScrapeTargets, in the provider process. Check and diff are pure; the transport to a
 * node is loaded by the operations that write, remove or read the file (serve/sitefile).
 */
import type * as pulumi from "@pulumi/pulumi";
import { sha256 as sha } from "../render/identity";
import { placeName, readPlaced, removePlaced, writePlaced, type Placed } from "../serve/sitefile";
import { authOf, providerLog, settled } from "./common";
import type { ScrapeTargetsWire } from "./scrapeTargets";
import { t } from "../text/messages";

const placed = (p: ScrapeTargetsWire): Placed => ({
  path: p.path,
  ...(p.node !== undefined && p.__file.conn !== undefined && { node: { name: p.node, conn: p.__file.conn } }),
});

/** Why the file on its node is not what was written, as the plan-time look found it. */
export function lookDrift(olds: ScrapeTargetsWire, news: ScrapeTargetsWire): string | undefined {
  const found = news.__file.found;
  if (!("sha256" in found) || found.sha256 === olds.sha256) return undefined;
  const where = placeName(placed(news));
  if (found.sha256 === null) return `${where} is gone; this up writes it again`;
  const [now, written] = [found.sha256.slice(0, 12), (olds.sha256 ?? "-").slice(0, 12)];
  return `${where} was changed there (sha256 ${now}, written ${written}); this up writes it again`;
}

/** Whether this provider process has said why the file is rewritten (Pulumi may diff it more than once). */
let said = false;

export function diff(
  _id: string,
  olds: ScrapeTargetsWire,
  news: ScrapeTargetsWire,
): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, olds, news));
}

function diffNow(
  _id: string,
  olds: ScrapeTargetsWire,
  news: ScrapeTargetsWire,
): pulumi.dynamic.DiffResult {
  if (olds.path !== news.path || olds.node !== news.node)
    return { changes: true, replaces: ["path"], deleteBeforeReplace: true };
  const drift = lookDrift(olds, news);
  if (drift !== undefined && !said) providerLog("scrape targets")(drift);
  said ||= drift !== undefined;
  return { changes: drift !== undefined || olds.sha256 !== sha(news.__file.content) };
}

async function write(p: ScrapeTargetsWire, written: string | undefined): Promise<string> {
  const log = providerLog("scrape targets");
  for (const w of p.__file.warnings) log(`warning: ${w}`);
  const content = p.__file.content;
  const known = [sha(content), ...(written === undefined ? [] : [written])];
  const kept = await writePlaced(placed(p), authOf(p.connection), content, known, "write the scrape targets");
  if (kept !== undefined) log(t("serve.scrapeKept", { where: placeName({ ...placed(p), path: kept }) }));
  const groups = (JSON.parse(content) as unknown[]).length;
  log(t("serve.scrapeWrote", { count: groups, where: placeName(placed(p)) }));
  return sha(content);
}

export async function create(inputs: ScrapeTargetsWire): Promise<pulumi.dynamic.CreateResult> {
  return { id: placeName(placed(inputs)), outs: { ...inputs, sha256: await write(inputs, undefined) } };
}

export async function update(
  _id: string,
  olds: ScrapeTargetsWire,
  news: ScrapeTargetsWire,
): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: { ...news, sha256: await write(news, olds.sha256) } };
}

export async function remove(_id: string, stored: ScrapeTargetsWire): Promise<void> {
  await removePlaced(placed(stored), authOf(stored.connection), "remove the scrape targets");
}

export async function read(id: string, stored: ScrapeTargetsWire): Promise<pulumi.dynamic.ReadResult> {
  const text = await readPlaced(placed(stored), authOf(stored.connection), "read the scrape targets");
  return { id, props: { ...stored, sha256: sha(text ?? "") } };
}
