/** The work of DgppProvision, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import type { DeploymentBundle } from "../render/types";
import { provisionDgpp, type ProvisionSettings } from "../serve/dgpp";
import { hostFor, withHosts } from "../remote";
import { nodePath } from "../text/shell";
import { authOf, providerLog, settled } from "./common";
import type { ConnectionSettings } from "./settings";
import { unpack } from "./packed";
import { t } from "../text/messages";

interface Props extends ProvisionSettings {
  bundle: DeploymentBundle;
  connection: ConnectionSettings;
  marker?: string;
}

/** As stored: the bundle packed under `__bundle`, or (earlier releases) nested as `bundle`. */
type Stored = Omit<Props, "bundle"> & ({ __bundle: string; staged: string[] } | { bundle: DeploymentBundle });

function fromWire(s: Stored): Props {
  if (!("__bundle" in s)) return s;
  const { __bundle, staged: _staged, ...rest } = s;
  return { ...rest, bundle: unpack<DeploymentBundle>(__bundle) };
}

/** What the staged files are on each node: the diff key besides the rev. */
function stagedIdentity(p: Props): string {
  return JSON.stringify(p.bundle.nodes.map((n) => [n.node, n.files.filter((f) => f.path.startsWith(`${p.paths.dir}/`)).map((f) => f.sha256)]));
}

export function diff(_id: string, oldWire: Stored, wire: Stored): Promise<pulumi.dynamic.DiffResult> {
  return settled(() => diffNow(_id, oldWire, wire));
}

function diffNow(_id: string, oldWire: Stored, wire: Stored): pulumi.dynamic.DiffResult {
  const olds = fromWire(oldWire);
  const news = fromWire(wire);
  const changed = olds.rev !== news.rev || stagedIdentity(olds) !== stagedIdentity(news) || (news.rev !== undefined && olds.marker !== news.rev);
  return { changes: changed };
}

async function run(wire: Stored): Promise<Stored> {
  const news = fromWire(wire);
  const log = providerLog(`${news.bundle.deployment} dgpp`);
  const o = await provisionDgpp(news.bundle, news, authOf(news.connection), log);
  if (o.backups.length > 0) log(t("serve.dgppBackups", { files: o.backups.join(", ") }));
  return { ...wire, ...(o.marker !== undefined && { marker: o.marker }) };
}

export async function create(inputs: Stored): Promise<pulumi.dynamic.CreateResult> {
  return { id: `${fromWire(inputs).bundle.deployment}-dgpp`, outs: await run(inputs) };
}

export async function update(_id: string, _olds: Stored, news: Stored): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: await run(news) };
}

export function remove(_id: string, stored: Stored): Promise<void> {
  return settled(() => removeNow(_id, stored));
}

function removeNow(_id: string, stored: Stored): void {
  const props = fromWire(stored);
  providerLog(`${props.bundle.deployment} dgpp`)(`the installed DGPP release${props.marker === undefined ? "" : ` ${props.marker}`} stays in ${props.paths.dir} on ${props.bundle.nodes.map((n) => n.node).join(", ")}; remove it there with scripts/dgpp-cluster if you no longer need it`);
}

export async function read(id: string, stored: Stored): Promise<pulumi.dynamic.ReadResult> {
  const props = fromWire(stored);
  const head = props.bundle.nodes[0];
  if (head === undefined) return { id, props };
  const marker = await withHosts([head], authOf(props.connection), async (hosts) => {
    const out = (await hostFor(hosts, head.node).run(`cat ${nodePath(props.paths.marker)} 2>/dev/null || true`, { step: "read the DGPP rev marker" })).stdout.trim();
    return out === "" ? undefined : out;
  });
  const { marker: _old, ...rest } = stored;
  return { id, props: { ...rest, ...(marker !== undefined && { marker }) } };
}
