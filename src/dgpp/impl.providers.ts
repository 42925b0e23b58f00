/** The work of DgppProvision, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import { provisionDgpp, type ProvisionSettings } from "./provision.serve";
import { hostFor, withHosts } from "../remote";
import { nodePath } from "../text/shell";
import { authOf, providerLog, settled, type ResourceProvider } from "../providers/common";
import type { ConnectionSettings } from "../providers/settings";
import { unpack } from "../providers/packed";
import { say, t } from "../text/messages";
import type { DgppWire } from "../providers/wire";
import { stale, upgrade, upgradeWords } from "../providers/stateVersion";

interface Props extends ProvisionSettings {
  bundle: DeploymentBundle;
  connection: ConnectionSettings;
  marker?: string;
}

/** The new inputs (this build's form) as the provider works with them. */
function fromWire(s: DgppWire): Props {
  const { __bundle, staged: _staged, stateVersion: _v, ...rest } = s;
  return { ...rest, bundle: unpack<DeploymentBundle>(__bundle) };
}

/** Stored outputs of any state version, upgraded (./stateVersion). */
const stored = (s: unknown) => upgrade("DgppProvision", s);

/** What the staged files are on each node: the diff key besides the rev. */
function stagedIdentity(p: Props): string {
  return JSON.stringify(
    p.bundle.nodes.map((n) => [
      n.node,
      n.files.filter((f) => f.path.startsWith(`${p.paths.dir}/`)).map((f) => f.sha256),
    ]),
  );
}

/** Whether the nodes are asked for anything: a new rev, other staged files, a marker that says another rev. */
function reaches(olds: Props, news: Props): boolean {
  const marker = news.rev !== undefined && olds.marker !== news.rev;
  return olds.rev !== news.rev || stagedIdentity(olds) !== stagedIdentity(news) || marker;
}

/** Diff's two sides may both be stored outputs of an older version (a refresh diffs them against the stored inputs). */
export function diff(_id: string, oldWire: unknown, wire: unknown): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: unknown, wire: unknown): pulumi.dynamic.DiffResult {
  const u = stored(oldWire);
  const news = fromWire(stored(wire).state);
  const changes = reaches(fromWire(u.state), news);
  if (!changes && stale(u)) providerLog(`${news.bundle.deployment} dgpp`)(say(upgradeWords("DgppProvision", u)));
  return { changes: changes || stale(u) };
}

async function run(wire: DgppWire): Promise<DgppWire> {
  const news = fromWire(wire);
  const log = providerLog(`${news.bundle.deployment} dgpp`);
  const o = await provisionDgpp(news.bundle, news, authOf(news.connection), log);
  if (o.backups.length > 0) log(t("serve.dgppBackups", { files: o.backups.join(", ") }));
  return { ...wire, ...(o.marker !== undefined && { marker: o.marker }) };
}

export async function create(given: unknown): Promise<pulumi.dynamic.CreateResult> {
  const inputs = stored(given).state;
  return { id: `${fromWire(inputs).bundle.deployment}-dgpp`, outs: await run(inputs) };
}

export async function update(_id: string, oldWire: unknown, given: unknown): Promise<pulumi.dynamic.UpdateResult> {
  const news = stored(given).state;
  const olds = stored(oldWire).state;
  // Only the state's version: rewritten, nothing staged or built.
  if (!reaches(fromWire(olds), fromWire(news))) {
    return { outs: { ...news, ...(olds.marker !== undefined && { marker: olds.marker }) } };
  }
  return { outs: await run(news) };
}

export function remove(_id: string, wire: unknown): Promise<void> {
  return settled(() => removeNow(_id, wire));
}

function removeNow(_id: string, wire: unknown): void {
  const props = fromWire(stored(wire).state);
  const release = props.marker === undefined ? "" : ` ${props.marker}`;
  const nodes = props.bundle.nodes.map((n) => n.node).join(", ");
  providerLog(`${props.bundle.deployment} dgpp`)(t("state.dgppStays", { release, dir: props.paths.dir, nodes }));
}

export async function read(id: string, wire?: unknown): Promise<pulumi.dynamic.ReadResult> {
  const state = stored(wire).state;
  const props = fromWire(state);
  const head = props.bundle.nodes[0];
  if (head === undefined) return { id, props: state };
  const marker = await withHosts([head], authOf(props.connection), async (hosts) => {
    const out = (
      await hostFor(hosts, head.node).run(`cat ${nodePath(props.paths.marker)} 2>/dev/null || true`, {
        step: "read the DGPP rev marker",
      })
    ).stdout.trim();
    return out === "" ? undefined : out;
  });
  const { marker: _old, ...rest } = state;
  return { id, props: { ...rest, ...(marker !== undefined && { marker }) } };
}

/** The kind's provider object, as its provider text loads it (./providerText). */
export const provider = { diff, create, update, delete: remove, read } satisfies ResourceProvider;
