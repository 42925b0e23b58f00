/** The work of ImageSync, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import { imageIds, syncImage, type ImageSpec } from "../serve/imagesync";
import { authOf, providerLog, settled, type ResourceProvider } from "./common";
import { allowedHere } from "./engineDecide";
import type { ImageSyncWire } from "./wire";
import { stale, upgrade } from "./stateVersion";
import { t } from "../text/messages";

type Props = ImageSyncWire;

const spec = (p: Props): ImageSpec => ({
  deployment: p.deployment,
  image: p.image,
  nodes: p.nodes,
  allowed: allowedHere(),
});
const names = (p: Props) => p.nodes.map((n) => n.node).join(",");

/** What asks for the nodes' images to be looked at: the reference, the nodes, an ID that moved. */
function reaches(olds: Props, news: Props): boolean {
  const drifted =
    olds.imageId === undefined || olds.nodes.some((n) => (olds.ids?.[n.node] ?? undefined) !== olds.imageId);
  return olds.image !== news.image || names(olds) !== names(news) || drifted;
}

/** The nodes' image IDs as the state keeps them: an absent image is null (JSON has no undefined). */
const stored = (ids: Record<string, string | undefined>): Record<string, string | null> =>
  Object.fromEntries(Object.entries(ids).map(([k, v]) => [k, v ?? null]));

/** How to reach the nodes: recorded without touching a node. */
const recorded = (p: Props) => JSON.stringify([p.nodes, p.connection]);

/** Stored outputs of any state version, upgraded (./stateVersion). */
const upgraded = (s: unknown) => upgrade("ImageSync", s);

export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const u = upgraded(oldWire);
  const news = upgraded(wire).state;
  return { changes: reaches(u.state, news) || recorded(u.state) !== recorded(news) || stale(u) };
}

async function run(news: Props): Promise<Props> {
  const o = await syncImage(spec(news), authOf(news.connection), providerLog(`${news.deployment} image`));
  return { ...news, imageId: o.id, source: o.source, ids: stored(o.ids) };
}

export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const inputs = upgraded(given).state;
  return { id: `${inputs.deployment}-image`, outs: await run(inputs) };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const news = upgraded(given).state;
  const olds = upgraded(oldWire).state;
  if (!reaches(olds, news))
    return { outs: { ...olds, ...news, imageId: olds.imageId, ids: olds.ids, source: olds.source } };
  return { outs: await run(news) };
}

export function remove(_id: string, wire: unknown): Promise<void> {
  return settled(() => removeNow(_id, wire));
}

function removeNow(_id: string, wire: unknown): void {
  const props = upgraded(wire).state;
  const nodes = props.nodes.map((n) => n.node).join(", ");
  providerLog(`${props.deployment} image`)(t("image.stays", { image: props.image, nodes }));
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const props = upgraded(wire).state;
  if (props.imageId === undefined) return { id, props };
  const ids = await imageIds(spec(props), authOf(props.connection));
  return { id, props: { ...props, ids: stored(ids) } };
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
