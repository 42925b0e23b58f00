/**
 * The recipe's container image with one image ID on every node of a deployment: taken from rank 0
 * when it has it (else from the first node that does, else pulled once on rank 0), then streamed
 * `docker save | ssh peer docker load` node to node (./fanout) to each node that lacks it or holds
 * another build under the same reference, and verified by ID.
 */
import { hostFor, withHosts, type Host, type SshAuth } from "../remote";
import type { NodeConn } from "../render/types";
import { msg, SaidError, t } from "../text/messages";
import { protectedRefusal } from "../text/protected";
import { quote } from "../text/shell";
import { bytesText, meter, rateText, sendScript, sentBytes, withChainAccess } from "./fanout";
import { firstRecord, printRecord } from "../protocol";

export interface ImageNode {
  node: string;
  conn: NodeConn;
  ip: string;
  stateDir: string;
  /** A protected node's other build of the image is replaced only with the run's allowance. */
  protected?: boolean;
}

export interface ImageSpec {
  deployment: string;
  image: string;
  nodes: ImageNode[];
  /** SM121_ALLOW_PROTECTED of this run. */
  allowed: string[];
}

/**
 * The refusal, when the copy would replace another build of the image on a protected node without
 * the run's allowance (a copy onto a node that lacks the image replaces nothing).
 */
export function protectedReplacements(
  spec: ImageSpec,
  ids: ReadonlyArray<string | undefined>,
  want: string,
): string | undefined {
  const refused = spec.nodes.filter(
    (n, i) => n.protected === true && ids[i] !== undefined && ids[i] !== want && !spec.allowed.includes(n.node),
  );
  if (refused.length === 0) return undefined;
  const situation = (n: ImageSpec["nodes"][number]) =>
    msg("serve.otherBuild", {
      image: spec.image,
      id: (ids[spec.nodes.indexOf(n)] ?? "").slice(0, 19),
      want: want.slice(0, 19),
    });
  return refused.map((n) => protectedRefusal(n.node, situation(n))).join("\n");
}

export interface ImageOutcome {
  id: string;
  source: string;
  pulled: boolean;
  /** Nodes that got the image from the source in this run. */
  copied: string[];
  /** Each node's image ID as last seen (undefined: the node lacks the image). */
  ids: Record<string, string | undefined>;
  /** Bytes that left the source node in this run, counted there (the chain sends the image once). */
  sentFromSource?: number;
}

/** The image's ID and size on a node, or undefined when the node does not have it. */
async function inspect(h: Host, image: string): Promise<{ id: string; size: number } | undefined> {
  // `docker image inspect` fails alike for a missing image and a daemon that does not answer;
  // `docker ps` tells them apart by its exit code.
  const script = [
    `if out=$(docker image inspect --format '{{.Id}} {{.Size}}' ${quote(image)}); then`,
    `  ${printRecord("image", '"id":"%s","size":%d', '"${out%% *}" "${out##* }"')}`,
    `elif docker ps -q > /dev/null 2>&1; then ${printRecord("imageAbsent")}; else exit 1; fi`,
  ].join("\n");
  const r = await h.run(script, { step: "inspect the image", allowFailure: true });
  const found = firstRecord(r.records, "image");
  if (found !== undefined) return { id: found.id, size: found.size };
  if (firstRecord(r.records, "imageAbsent") !== undefined) return undefined;
  const tail = r.stderr.trim().split("\n").slice(-3).join(" ");
  throw new SaidError(msg("copy.inspectFailed", { node: h.node, image, code: String(r.code), tail }));
}

/**
 * `docker save` on the source, streamed once into a chain of the peers: each `docker load`s it and
 * forwards the same bytes to the next. Returns the bytes that left the source.
 */
async function copyChain(
  spec: ImageSpec,
  source: Host,
  from: string,
  chain: ImageNode[],
  host: (n: ImageNode) => Host,
  size: number,
  log: (m: string) => void,
): Promise<number> {
  const names = chain.map((n) => n.node).join(" -> ");
  const t0 = Date.now();
  // dd counts the bytes of the stream (status=progress) for the progress lines.
  const counter = `"\${TMPDIR:-/tmp}"/sm121-image-${from}-${t0}.progress`;
  const measure = async () =>
    Number(
      (
        await source.run(
          `tr '\\r' '\\n' 2>/dev/null < ${counter} | awk '$2 == "bytes" { b = $1 } END { print b + 0 }'`,
          { step: "measure the image copy" },
        )
      ).stdout.trim(),
    );
  const peers = chain.map((n) => ({
    host: host(n),
    ip: n.ip,
    port: n.conn.port,
    user: n.conn.user,
    stateDir: n.stateDir,
  }));
  const sent = await withChainAccess(
    peers,
    () => "exec docker load\n",
    async (a, first) => {
      const stop = meter(t("copy.image", { image: spec.image, nodes: names }), measure, size, log);
      try {
        const save = `docker save ${quote(spec.image)} | dd bs=4M iflag=fullblock status=progress 2> ${counter}`;
        return sentBytes(
          (await source.run(sendScript(a, first, save), { step: `copy the image to ${names}` })).records,
        );
      } finally {
        stop();
        await source.run(`rm -f ${counter}`, { step: "remove the image copy's counter" }).catch(() => undefined);
      }
    },
  );
  log(
    t("serve.imageCopied", {
      image: spec.image,
      nodes: names,
      rate: rateText(size, Date.now() - t0),
      sent: bytesText(sent),
      from,
    }),
  );
  return sent;
}

export async function syncImage(spec: ImageSpec, auth: SshAuth, log: (m: string) => void): Promise<ImageOutcome> {
  const head = spec.nodes[0];
  if (head === undefined) throw new SaidError(msg("copy.noNodes", { deployment: spec.deployment }));
  return withHosts(spec.nodes, auth, async (hosts) => {
    const seen = await Promise.all(spec.nodes.map((n) => inspect(hostFor(hosts, n.node), spec.image)));
    let srcIndex = seen[0] !== undefined ? 0 : seen.findIndex((s) => s !== undefined);
    let pulled = false;
    if (srcIndex < 0) {
      srcIndex = 0;
      log(t(spec.nodes.length > 1 ? "serve.pullingOnce" : "serve.pulling", { image: spec.image, node: head.node }));
      const t0 = Date.now();
      await hostFor(hosts, head.node).run(`docker pull ${quote(spec.image)}`, { step: `docker pull ${spec.image}` });
      seen[0] = await inspect(hostFor(hosts, head.node), spec.image);
      if (seen[0] === undefined) throw new SaidError(msg("copy.pulledAbsent", { node: head.node, image: spec.image }));
      pulled = true;
      const done = {
        image: spec.image,
        id: seen[0].id.slice(0, 19),
        size: bytesText(seen[0].size),
        node: head.node,
        seconds: ((Date.now() - t0) / 1000).toFixed(1),
      };
      log(t("serve.pulled", done));
    }
    const src = spec.nodes[srcIndex] ?? head;
    const want = seen[srcIndex] as { id: string; size: number };
    const refused = protectedReplacements(
      spec,
      seen.map((s) => s?.id),
      want.id,
    );
    if (refused !== undefined) throw new SaidError(msg("copy.refused", { refused }));
    const peers = spec.nodes.map((n, i) => ({ n, i })).filter(({ i }) => seen[i]?.id !== want.id);
    for (const { n, i } of peers) {
      const had = seen[i];
      const about = { node: n.node, image: spec.image, from: src.node };
      log(
        had === undefined
          ? t("copy.lacks", { ...about, size: bytesText(want.size) })
          : t("copy.replacing", { ...about, had: had.id.slice(0, 19), want: want.id.slice(0, 19) }),
      );
    }
    const sentFromSource =
      peers.length === 0
        ? 0
        : await copyChain(
            spec,
            hostFor(hosts, src.node),
            src.node,
            peers.map((p) => p.n),
            (n) => hostFor(hosts, n.node),
            want.size,
            log,
          );
    const ids: Record<string, string | undefined> = {};
    await Promise.all(
      spec.nodes.map(async (n, i) => {
        const now = peers.some((p) => p.i === i) ? await inspect(hostFor(hosts, n.node), spec.image) : seen[i];
        ids[n.node] = now?.id;
        if (now?.id !== want.id) {
          const is = now?.id ?? t("copy.absent");
          throw new SaidError(msg("copy.wrongId", { node: n.node, image: spec.image, is, want: want.id }));
        }
      }),
    );
    if (peers.length === 0) log(t("serve.imageEverywhere", { image: spec.image, id: want.id.slice(0, 19) }));
    return { id: want.id, source: src.node, pulled, copied: peers.map((p) => p.n.node), ids, sentFromSource };
  });
}

/** Each node's image ID now (read-only; refresh). */
export async function imageIds(spec: ImageSpec, auth: SshAuth): Promise<Record<string, string | undefined>> {
  return withHosts(spec.nodes, auth, async (hosts) => {
    const found = await Promise.all(
      spec.nodes.map(async (n) => [n.node, (await inspect(hostFor(hosts, n.node), spec.image))?.id] as const),
    );
    return Object.fromEntries(found);
  });
}
