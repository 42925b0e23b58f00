/** The work of ModelCache, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import { hfCacheDir } from "../render/node";
import { checkModel, removeModel, syncModel, type ModelSpec } from "../serve/modelcache";
import { authOf, providerLog, settled, type ResourceProvider } from "./common";
import type { ModelCacheWire } from "./wire";
import { stale, upgrade } from "./stateVersion";
import { t } from "../text/messages";

type Props = ModelCacheWire;

const spec = (p: Props): ModelSpec => ({
  deployment: p.deployment,
  repo: p.repo,
  revision: p.revision,
  nodes: p.nodes,
});
const where = (p: Props) => JSON.stringify(p.nodes.map((n) => [n.node, n.hfHome]));

/** What asks for the nodes' caches to be looked at (and completed): the model, the caches, a gap. */
function reaches(olds: Props, news: Props): boolean {
  return (
    olds.repo !== news.repo ||
    olds.revision !== news.revision ||
    where(olds) !== where(news) ||
    olds.commit === undefined ||
    Object.keys(olds.incomplete ?? {}).length > 0
  );
}

/** What only the state keeps (how to reach the nodes, what a delete does): recorded without touching a node. */
function recorded(p: Props): string {
  return JSON.stringify([p.nodes, p.protectedNodes, p.onDelete, p.connection]);
}

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("ModelCache", s);

export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const u = stored(oldWire);
  const news = stored(wire).state;
  return { changes: reaches(u.state, news) || recorded(u.state) !== recorded(news) || stale(u) };
}

async function run(news: Props): Promise<Props> {
  const log = providerLog(`${news.deployment} model`);
  const o = await syncModel(spec(news), news.hfToken, authOf(news.connection), log);
  const { incomplete: _i, ...rest } = news;
  return { ...rest, commit: o.commit, files: o.files, bytes: o.bytes, source: o.source };
}

export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const inputs = stored(given).state;
  return { id: `${inputs.deployment}-model`, outs: await run(inputs) };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const news = stored(given).state;
  const olds = stored(oldWire).state;
  const log = providerLog(`${news.deployment} model`);
  if (olds.repo !== news.repo || olds.revision !== news.revision) {
    log(
      t("model.otherStays", {
        model: `${olds.repo}@${olds.revision}`,
        nodes: olds.nodes.map((n) => n.node).join(", "),
      }),
    );
  }
  if (!reaches(olds, news))
    return {
      outs: { ...olds, ...news, commit: olds.commit, files: olds.files, bytes: olds.bytes, source: olds.source },
    };
  for (const [node, missing] of Object.entries(olds.incomplete ?? {})) {
    const files = missing.slice(0, 3).join("; ");
    log(
      missing.length > 3
        ? t("model.lackedMore", { node, files, count: missing.length - 3 })
        : t("model.lacked", { node, files }),
    );
  }
  return { outs: await run(news) };
}

export async function remove(_id: string, wire: unknown): Promise<void> {
  const props = stored(wire).state;
  const log = providerLog(`${props.deployment} model`);
  const nodes = props.nodes.map((n) => n.node).join(", ");
  if (props.onDelete !== "remove") {
    const dir = props.nodes[0] === undefined ? "" : hfCacheDir(props.nodes[0].hfHome, props.repo);
    log(t("model.stays", { repo: props.repo, nodes, dir }));
    return;
  }
  const gone = await removeModel(spec(props), props.protectedNodes, authOf(props.connection));
  const kept = props.protectedNodes;
  // A list of nodes, not a counted noun: one node or several, in every language.
  const keepKey = kept.length === 1 ? "model.protectedKeeps" : "model.protectedKeep";
  const keep = kept.length > 0 ? t(keepKey, { nodes: kept.join(", ") }) : "";
  const repo = props.repo;
  log(
    gone.length > 0
      ? t("model.removed", { repo, nodes: gone.join(", "), keep })
      : t("model.removedNone", { repo, keep }),
  );
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const props = stored(wire).state;
  if (props.commit === undefined) return { id, props };
  const incomplete = await checkModel(spec(props), props.commit, authOf(props.connection));
  const { incomplete: _old, ...rest } = props;
  return { id, props: { ...rest, ...(Object.keys(incomplete).length > 0 && { incomplete }) } };
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
