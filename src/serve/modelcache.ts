/**
 * A model's checkpoint, complete, in the HF cache of every node of a deployment: found on a node
 * already, or downloaded once (on rank 0), then copied node to node (./fanout) to the peers that
 * lack it, continuing partial files, and verified by file list and sizes against the source.
 */
import { hostFor, withHosts, type Host, type SshAuth } from "../remote";
import { hfCacheDir } from "../render/node";
import type { NodeConn } from "../render/types";
import { nodePath, quote, shellValue, shellWords } from "../text/shell";
import { bytesText, meter, rateText, sendScript, sentBytes, withChainAccess } from "./fanout";
import {
  chainPlan,
  completeness,
  copyPlan,
  manifestScript,
  parseManifest,
  type CopyItem,
  type CopyPlan,
  type Manifest,
} from "./hfcache";
import { msg, SaidError, t, type MessageKey, type Params } from "../text/messages";

export interface CacheNode {
  node: string;
  conn: NodeConn;
  ip: string;
  stateDir: string;
  /** The node's HF_HOME (the cache is `<hfHome>/hub`). */
  hfHome: string;
}

export interface ModelSpec {
  deployment: string;
  repo: string;
  /** A branch, tag or commit: the recipe's pin, else "main". */
  revision: string;
  nodes: CacheNode[];
}

export interface ModelOutcome {
  commit: string;
  files: number;
  bytes: number;
  /** The node the copies came from, and whether this run downloaded it there. */
  source: string;
  downloaded: boolean;
  /** Bytes sent to each peer that lacked some (continued partial files count their rest only). */
  copied: Record<string, number>;
  /** Nodes whose cache is incomplete, and why (a read's finding; empty after a run). */
  incomplete: Record<string, string[]>;
  /** Bytes that left the source node in this run, counted there (the chain sends the payload once). */
  sentFromSource?: number;
}

async function manifestOf(h: Host, dir: string): Promise<Manifest> {
  return parseManifest((await h.run(manifestScript(dir), { step: "list the model cache" })).stdout);
}

/** Sum of the file sizes under the repo dir (partial blobs too): the progress measure. */
function bytesScript(dir: string): string {
  const sizes = `find ${nodePath(dir)} -type f -printf '%s\\n' 2>/dev/null || true`;
  return `{ ${sizes}; } | awk '{ s += $1 } END { print s + 0 }'`;
}

async function bytesOn(h: Host, dir: string): Promise<number> {
  return Number((await h.run(bytesScript(dir), { step: "measure the model cache" })).stdout.trim());
}

function downloadScript(n: CacheNode, repo: string, revision: string, token: string | undefined): string {
  const args = `download ${quote(repo)} --revision ${quote(revision)}`;
  return [
    `export HF_HOME=${nodePath(n.hfHome)}`,
    // The token only ever in this script's environment (stdin), never in an argv.
    token === undefined ? "unset HF_TOKEN" : `export HF_TOKEN=${quote(token)}`,
    `export HF_HUB_DISABLE_PROGRESS_BARS=1 PATH="$HOME/.local/bin:$PATH"`,
    `if command -v hf >/dev/null 2>&1; then hf ${args}`,
    `elif command -v huggingface-cli >/dev/null 2>&1; then huggingface-cli ${args}`,
    `else echo ${quote(`sm121: ${t("copy.noHf", { node: n.node, repo, hub: `${n.hfHome}/hub` })}`)} >&2; exit 127; fi`,
  ].join("\n");
}

/** The stream the receiver reads: `d b64path`, `f offset length b64path` + bytes, `l b64path b64target`, `e`. */
function producer(dir: string, items: CopyItem[]): string {
  const b64 = (s: string) => Buffer.from(s).toString("base64");
  const lines = [`cd ${nodePath(dir)}`];
  for (const it of items) {
    if (it.kind === "d") lines.push(`printf 'd %s\\n' ${b64(it.path)}`);
    else if (it.kind === "l") lines.push(`printf 'l %s %s\\n' ${b64(it.path)} ${b64(it.target)}`);
    else
      lines.push(
        `printf 'f %s %s %s\\n' ${it.offset} ${it.length} ${b64(it.path)}`,
        `tail -c +${it.offset + 1} -- ${quote(it.path)} | head -c ${it.length}`,
      );
  }
  lines.push("printf 'e\\n'");
  return lines.join("\n");
}

/**
 * The peer's side: writes each item under the repo dir, appending to `<file>.incomplete` and
 * renaming it when whole.
 */
export function receiverScript(dir: string): string {
  const said = (key: MessageKey, args?: Params) => shellWords(t(key, args));
  const path = said("copy.badPath", { path: shellValue("$1") });
  const early = said("copy.endedEarly", { path: shellValue("$p") });
  return [
    "set -euo pipefail",
    `base=${nodePath(dir)}`,
    `mkdir -p "$base"`,
    `bad() { echo ${shellWords(`sm121: ${t("copy.badRecord", { what: shellValue("$1") })}`)} >&2; exit 3; }`,
    `dec() { printf '%s' "$1" | base64 -d; }`,
    `safe() { case "/$1/" in */../*|//) bad ${path};; esac; case "$1" in /*) bad ${path};; esac; }`,
    "while IFS=' ' read -r kind a b c; do",
    '  case "$kind" in',
    `    d) p=$(dec "$a"); safe "$p"; mkdir -p -- "$base/$p" ;;`,
    `    l) p=$(dec "$a"); t=$(dec "$b"); safe "$p"; ` +
      `case "$t" in /*|*[!A-Za-z0-9._/-]*) bad ${said("copy.badLink", { target: shellValue("$t") })};; esac; ` +
      `ln -sfn -- "$t" "$base/$p" ;;`,
    `    f) p=$(dec "$c"); safe "$p"; part="$base/$p.incomplete"; end=$((a + b)); have=-1`,
    // In a chain the stream carries what any peer lacks: a blob (content-addressed) this node
    // holds whole, or in part beyond the offset, is skipped as far as it goes.
    `       case "$p" in blobs/*) if [ -f "$base/$p" ] && [ "$(stat -c %s "$base/$p")" -eq "$end" ]; then have=$end; ` +
      `elif [ -f "$part" ]; then s=$(stat -c %s "$part"); ` +
      `if [ "$s" -ge "$a" ] && [ "$s" -le "$end" ]; then have=$s; fi; fi;; esac`,
    `       if [ "$have" -eq "$end" ] && [ -f "$base/$p" ]; then ` +
      `head -c "$b" > /dev/null; [ $? -eq 0 ] || bad ${early}; continue; fi`,
    `       if [ "$have" -gt "$a" ]; then head -c $((have - a)) > /dev/null; elif [ "$a" -eq 0 ]; then : > "$part"; ` +
      `elif [ ! -f "$part" ] || [ "$(stat -c %s "$part")" -ne "$a" ]; then ` +
      `bad ${said("copy.cannotContinue", { path: shellValue("$p"), bytes: shellValue("$a") })}; fi`,
    `       if [ "$have" -lt "$a" ]; then have=$a; fi`,
    `       head -c $((end - have)) >> "$part"`,
    `       [ "$(stat -c %s "$part")" -eq "$end" ] || bad ${early}`,
    `       mv -f -- "$part" "$base/$p" ;;`,
    "    e) echo done; exit 0 ;;",
    `    *) bad ${said("copy.badKind", { kind: shellValue("$kind") })} ;;`,
    "  esac",
    "done",
    `bad ${said("copy.noEndRecord")}`,
  ].join("\n");
}

/**
 * The copy to the peers that lack files, as one chain over the cluster network: the source sends
 * one stream to the first peer; each peer writes what it lacks and forwards the stream to the next.
 * Returns the bytes that left the source.
 */
async function copyChain(
  src: Host,
  from: CacheNode,
  chain: CacheNode[],
  plans: CopyPlan[],
  host: (n: CacheNode) => Host,
  dirOf: (n: CacheNode) => string,
  log: (m: string) => void,
): Promise<number> {
  const plan = chainPlan(plans);
  const names = chain.map((n) => n.node).join(" -> ");
  const what =
    plan.present > 0
      ? t("copy.continuing", { bytes: bytesText(plan.bytes), present: bytesText(plan.present) })
      : bytesText(plan.bytes);
  log(t("serve.modelCopying", { what, from: from.node, nodes: names }));
  const last = chain[chain.length - 1] as CacheNode;
  const base = await bytesOn(host(last), dirOf(last));
  const t0 = Date.now();
  const peers = chain.map((n) => ({
    host: host(n),
    ip: n.ip,
    port: n.conn.port,
    user: n.conn.user,
    stateDir: n.stateDir,
  }));
  const byHost = new Map(chain.map((n, i) => [peers[i]?.host, n] as const));
  // The stream paths are relative to the repo dir, which may differ per node (HF_HOME).
  const sent = await withChainAccess(
    peers,
    (p) => receiverScript(dirOf(byHost.get(p.host) as CacheNode)),
    async (a, first) => {
      const progress = async () => (await bytesOn(host(last), dirOf(last))) - base;
      const stop = meter(t("copy.to", { node: last.node }), progress, plans[plans.length - 1]?.bytes, log);
      try {
        return sentBytes(
          (
            await src.run(sendScript(a, first, producer(dirOf(from), plan.items)), {
              step: `copy the model to ${names}`,
            })
          ).records,
        );
      } finally {
        stop();
      }
    },
  );
  log(
    t("serve.modelCopied", {
      rate: rateText(plan.bytes, Date.now() - t0),
      nodes: names,
      sent: bytesText(sent),
      from: from.node,
    }),
  );
  return sent;
}

export async function syncModel(
  spec: ModelSpec,
  token: string | undefined,
  auth: SshAuth,
  log: (m: string) => void,
): Promise<ModelOutcome> {
  const head = spec.nodes[0];
  if (head === undefined) throw new SaidError(msg("copy.noNodes", { deployment: spec.deployment }));
  return withHosts(spec.nodes, auth, async (hosts) => {
    const dirOf = (n: CacheNode) => hfCacheDir(n.hfHome, spec.repo);
    const seen = await Promise.all(spec.nodes.map((n) => manifestOf(hostFor(hosts, n.node), dirOf(n))));
    let srcIndex = seen.findIndex((m) => completeness(m, spec.revision).missing.length === 0);
    let downloaded = false;
    if (srcIndex < 0) {
      srcIndex = 0;
      const h = hostFor(hosts, head.node);
      log(
        t(spec.nodes.length > 1 ? "serve.downloadingOnce" : "serve.downloading", {
          model: `${spec.repo}@${spec.revision}`,
          node: head.node,
        }),
      );
      const t0 = Date.now();
      const base = await bytesOn(h, dirOf(head));
      const progress = async () => (await bytesOn(h, dirOf(head))) - base;
      const stop = meter(t("copy.downloadOn", { node: head.node }), progress, undefined, log);
      try {
        await h.run(downloadScript(head, spec.repo, spec.revision, token), { step: `download ${spec.repo}` });
      } finally {
        stop();
      }
      seen[0] = await manifestOf(h, dirOf(head));
      downloaded = true;
      log(
        t("serve.downloaded", {
          rate: rateText((await bytesOn(h, dirOf(head))) - base, Date.now() - t0),
          node: head.node,
        }),
      );
    }
    const src = spec.nodes[srcIndex] ?? head;
    const srcM = seen[srcIndex] as Manifest;
    const done = completeness(srcM, spec.revision);
    if (done.commit === undefined || done.missing.length > 0) {
      const where = { model: `${spec.repo}@${spec.revision}`, dir: dirOf(src), node: src.node };
      throw new SaidError(msg("copy.incomplete", { ...where, missing: done.missing.join("; ") }));
    }
    const commit = done.commit;
    if (!downloaded)
      log(
        t("serve.modelComplete", {
          model: `${spec.repo}@${spec.revision}`,
          commit: commit.slice(0, 12),
          node: src.node,
        }),
      );
    const peers = spec.nodes
      .map((n, i) => ({ n, i }))
      .filter(({ i }) => i !== srcIndex && copyPlan(srcM, commit, seen[i] as Manifest).items.length > 0);
    const copied: Record<string, number> = {};
    let sentFromSource = 0;
    if (peers.length > 0) {
      const plans = peers.map(({ i }) => copyPlan(srcM, commit, seen[i] as Manifest));
      peers.forEach(({ n }, k) => (copied[n.node] = plans[k]?.bytes ?? 0));
      sentFromSource = await copyChain(
        hostFor(hosts, src.node),
        src,
        peers.map((p) => p.n),
        plans,
        (n) => hostFor(hosts, n.node),
        dirOf,
        log,
      );
    }
    // Verified against the source: every file of the revision at its size, every link, the refs.
    const after = await Promise.all(
      peers.map(async ({ n }) => ({ n, m: await manifestOf(hostFor(hosts, n.node), dirOf(n)) })),
    );
    for (const { n, m } of after) {
      const left = copyPlan(srcM, commit, m);
      if (left.items.length > 0) {
        const short = { node: n.node, repo: spec.repo, count: left.items.length, bytes: bytesText(left.bytes) };
        throw new SaidError(msg("copy.stillShort", short));
      }
    }
    const untouched = spec.nodes.filter((_, i) => i !== srcIndex && !peers.some((p) => p.i === i)).map((n) => n.node);
    if (untouched.length > 0) log(t("serve.sameFiles", { nodes: untouched.join(", ") }));
    return {
      commit,
      files: done.files,
      bytes: done.bytes,
      source: src.node,
      downloaded,
      copied,
      incomplete: {},
      sentFromSource,
    };
  });
}

/** Which nodes lack the recorded revision now (read-only; refresh). */
export async function checkModel(spec: ModelSpec, commit: string, auth: SshAuth): Promise<Record<string, string[]>> {
  return withHosts(spec.nodes, auth, async (hosts) => {
    const found = await Promise.all(
      spec.nodes.map(
        async (n) =>
          [
            n.node,
            completeness(await manifestOf(hostFor(hosts, n.node), hfCacheDir(n.hfHome, spec.repo)), commit).missing,
          ] as const,
      ),
    );
    return Object.fromEntries(found.filter(([, m]) => m.length > 0));
  });
}

/** Delete with `remove`: the repo dir goes from every node but the protected ones. */
export async function removeModel(spec: ModelSpec, protectedNodes: string[], auth: SshAuth): Promise<string[]> {
  const nodes = spec.nodes.filter((n) => !protectedNodes.includes(n.node));
  await withHosts(nodes, auth, async (hosts) => {
    await Promise.all(
      nodes.map((n) =>
        hostFor(hosts, n.node).run(`rm -rf ${nodePath(hfCacheDir(n.hfHome, spec.repo))}`, {
          step: "remove the model cache",
        }),
      ),
    );
  });
  return nodes.map((n) => n.node);
}
