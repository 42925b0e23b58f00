/** The work of DgppProvision, in the provider process. */
import type * as pulumi from "@pulumi/pulumi";
import type { DgppPaths } from "../render/dgpp";
import type { DeploymentBundle } from "../render/types";
import { provisionDgpp } from "../serve/dgpp";
import { withHosts } from "../remote";
import { nodePath } from "../targets/shell";
import { authOf, providerLog } from "./common";
import type { ConnectionSettings } from "./engineDeployment";

interface Props {
  bundle: DeploymentBundle;
  recipe: string;
  paths: DgppPaths;
  rev?: string;
  buildScript?: string;
  pollS: number;
  capS: number;
  connection: ConnectionSettings;
  marker?: string;
}

/** What the staged files are on each node: the diff key besides the rev. */
function stagedIdentity(p: Props): string {
  return JSON.stringify(p.bundle.nodes.map((n) => [n.node, n.files.filter((f) => f.path.startsWith(`${p.paths.dir}/`)).map((f) => f.sha256)]));
}

export async function diff(_id: string, olds: Props, news: Props): Promise<pulumi.dynamic.DiffResult> {
  const changed = olds.rev !== news.rev || stagedIdentity(olds) !== stagedIdentity(news) || (news.rev !== undefined && olds.marker !== news.rev);
  return { changes: changed };
}

async function run(news: Props): Promise<Props> {
  const log = providerLog(`${news.bundle.deployment} dgpp`);
  const o = await provisionDgpp(news.bundle, { recipe: news.recipe, paths: news.paths, pollS: news.pollS, capS: news.capS, ...(news.rev !== undefined && { rev: news.rev }), ...(news.buildScript !== undefined && { buildScript: news.buildScript }) }, authOf(news.connection), log);
  return { ...news, ...(o.marker !== undefined && { marker: o.marker }) };
}

export async function create(inputs: Props): Promise<pulumi.dynamic.CreateResult> {
  return { id: `${inputs.bundle.deployment}-dgpp`, outs: await run(inputs) };
}

export async function update(_id: string, _olds: Props, news: Props): Promise<pulumi.dynamic.UpdateResult> {
  return { outs: await run(news) };
}

export async function remove(_id: string, props: Props): Promise<void> {
  providerLog(`${props.bundle.deployment} dgpp`)(`the installed DGPP release${props.marker === undefined ? "" : ` ${props.marker}`} stays in ${props.paths.dir} on ${props.bundle.nodes.map((n) => n.node).join(", ")}; remove it there with scripts/dgpp-cluster if you no longer need it`);
}

export async function read(id: string, props: Props): Promise<pulumi.dynamic.ReadResult> {
  const head = props.bundle.nodes[0];
  if (head === undefined) return { id, props };
  const marker = await withHosts([{ node: head.node, conn: head.conn }], authOf(props.connection), async (hosts) => {
    const h = hosts.get(head.node);
    if (h === undefined) return undefined;
    const out = (await h.run(`cat ${nodePath(props.paths.marker)} 2>/dev/null || true`, { step: "read the DGPP rev marker" })).stdout.trim();
    return out === "" ? undefined : out;
  });
  const { marker: _old, ...rest } = props;
  return { id, props: { ...rest, ...(marker !== undefined && { marker }) } };
}
