/**
 * Node to node over the cluster network: a source node streams to its peers with OpenSSH, as
 * sparkrun does, without the nodes having to trust each other beforehand and without sm121's own
 * key ever leaving the machine that runs Pulumi.
 *
 * For one operation sm121 makes a fresh ed25519 key pair in memory and, over its own (verified)
 * connection to each peer, appends the public key to the peer's ~/.ssh/authorized_keys as
 *   restrict,command="bash <stateDir>/fanout/<id>/recv.sh",expiry-time="<now + 1 h>" <key> sm121-fanout-<id>
 * so that it can only feed that operation's receiver (no shell, no forwarding, no pty), only for
 * an hour, and is removed again when the operation ends (lapsed lines of an operation that died are
 * dropped by the next one). The private key reaches the source inside the script on stdin, lives in
 * a 0600 file of a temporary directory for the copy, and is deleted with it. The source trusts
 * exactly the host key sm121 verified for the peer (sm121:knownHosts), through a known_hosts file
 * of its own and HostKeyAlias: never the node's own known_hosts, never accept-new.
 */
import { ed25519Pair, type Host } from "../remote";
import { msg, SaidError, t } from "../text/messages";
import { nodePath, quote, shellValue, shellWords } from "../text/shell";
import { firstRecord, printRecord, recordsOf, type NodeRecord } from "../protocol";

export interface Peer {
  host: Host;
  /** Where the source dials it: the node's cluster address and its sshd's port and user. */
  ip: string;
  port: number;
  user: string;
  stateDir: string;
}

export interface Grant {
  peer: Peer;
  /** The receiver's absolute path on the peer (the key's forced command). */
  recv: string;
}

export interface Access {
  grants: Grant[];
  privateKey: string;
}

const SAFE_PATH = /^\/[A-Za-z0-9_./+@:-]+$/;

/**
 * Runs `fn` with `receiver` (a bash script that reads the stream on stdin) installed on every peer
 * and the operation's key authorized there for it alone; removes both afterwards, also on failure.
 */
export async function withPeerAccess<T>(peers: Peer[], receiver: string, fn: (a: Access) => Promise<T>): Promise<T> {
  const op = newOperation();
  const granted: Grant[] = [];
  try {
    await Promise.all(peers.map(async (peer) => granted.push(await grant(peer, op, receiver))));
    return await fn({ grants: granted, privateKey: op.pair.private });
  } finally {
    await revokeAll(granted, op.id);
  }
}

/**
 * A chain: the source sends to the first peer only; each peer writes what it receives (`writerOf`,
 * a bash script reading the stream on stdin) and forwards the same bytes to the next peer, so that
 * the payload leaves the source once. A peer dials the next with the operation's key, which it
 * holds in its 0600 copy directory for the copy's duration, and trusts exactly the host key sm121
 * verified for the next peer. `fn` gets the grant of the first peer.
 */
export async function withChainAccess<T>(
  peers: Peer[],
  writerOf: (p: Peer) => string,
  fn: (a: Access, first: Grant) => Promise<T>,
): Promise<T> {
  const op = newOperation();
  const granted: Grant[] = [];
  try {
    // From the last peer back: each receiver names the next peer's receiver.
    let next: Grant | undefined;
    for (const peer of [...peers].reverse()) {
      next = await grant(peer, op, chainReceiver(writerOf(peer), next, op.pair.private));
      granted.push(next);
    }
    if (next === undefined) throw new SaidError(msg("serve.chainNoPeer"));
    return await fn({ grants: [...granted].reverse(), privateKey: op.pair.private }, next);
  } finally {
    await revokeAll(granted, op.id);
  }
}

interface Operation {
  id: string;
  pair: { public: string; private: string };
}

function newOperation(): Operation {
  const id = `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 8)}`;
  return { id, pair: ed25519Pair(`sm121-fanout-${id}`) };
}

async function grant(peer: Peer, op: Operation, receiver: string): Promise<Grant> {
  if (peer.host.hostKey === undefined) throw new SaidError(msg("serve.copyLocalPeer", { node: peer.host.node }));
  const res = await peer.host.run(grantScript(peer.stateDir, op.id, op.pair.public, receiver), {
    step: "authorize the copy from the source node",
  });
  const recv = firstRecord(res.records, "recv")?.path;
  if (recv === undefined || !SAFE_PATH.test(recv))
    throw new SaidError(msg("serve.copyPathNotPlain", { node: peer.host.node, path: String(recv) }));
  return { peer, recv };
}

async function revokeAll(granted: Grant[], id: string): Promise<void> {
  await Promise.allSettled(
    granted.map((g) => g.peer.host.run(revokeScript(g.peer.stateDir, id), { step: "remove the copy's key" })),
  );
}

/** The ssh command that feeds `g`'s receiver, with the key and known_hosts files named in shell words. */
function sshTo(g: Grant, key: string, knownHosts: string): string {
  const alias = `sm121-peer-${g.peer.host.node}`;
  return [
    "ssh",
    "-F",
    "/dev/null",
    "-i",
    key,
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    "IdentityAgent=none",
    "-o",
    "BatchMode=yes",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    `UserKnownHostsFile=${knownHosts}`,
    "-o",
    "GlobalKnownHostsFile=/dev/null",
    "-o",
    `HostKeyAlias=${alias}`,
    "-o",
    "ConnectTimeout=15",
    "-o",
    "ServerAliveInterval=15",
    "-p",
    String(g.peer.port),
    quote(`${g.peer.user}@${g.peer.ip}`),
    quote(`bash ${g.recv}`),
  ].join(" ");
}

function knownHostsLine(g: Grant): string {
  return quote(`sm121-peer-${g.peer.host.node} ${g.peer.host.hostKey ?? ""}`);
}

/**
 * A chain peer's receiver: writes the stream with `writer` and, when there is a next peer, tees the
 * same bytes into the next peer's receiver; fails when either fails.
 */
function chainReceiver(writer: string, next: Grant | undefined, privateKey: string): string {
  const w = Buffer.from(writer).toString("base64");
  const lines = [
    "set -euo pipefail",
    `k=$(cd "$(dirname "$0")" && pwd)`,
    `printf '%s' ${quote(w)} | base64 -d > "$k/write.sh"`,
  ];
  if (next === undefined) return [...lines, `exec bash "$k/write.sh"`].join("\n");
  const forward = t("serve.copyForwardFailed", { node: next.peer.host.node, ip: next.peer.ip });
  return [
    ...lines,
    "umask 077",
    `cat > "$k/next_id" <<'SM121_KEY'`,
    privateKey.trim(),
    "SM121_KEY",
    `printf '%s\\n' ${knownHostsLine(next)} > "$k/next_kh"`,
    `rm -f "$k/fwd"; mkfifo "$k/fwd"`,
    `${sshTo(next, `"$k/next_id"`, `"$k/next_kh"`)} < "$k/fwd" & fwd=$!`,
    "set +e",
    `tee "$k/fwd" | bash "$k/write.sh"; st=("\${PIPESTATUS[@]}")`,
    `wait "$fwd"; f=$?`,
    "set -e",
    `if [ "\${st[1]}" -ne 0 ]; then echo ${shellWords(`sm121: ${t("serve.copyWriteFailed")}`)} >&2; exit 1; fi`,
    `if [ "\${st[0]}" -ne 0 ] || [ "$f" -ne 0 ]; then echo ${shellWords(`sm121: ${forward}`)} >&2; exit 1; fi`,
  ].join("\n");
}

function grantScript(stateDir: string, id: string, publicKey: string, receiver: string): string {
  const b64 = Buffer.from(receiver).toString("base64");
  const notPlain = shellWords(`sm121: ${t("serve.copyDirNotPlain", { path: shellValue("$d") })}`);
  return [
    "umask 077",
    `d=${nodePath(stateDir)}/fanout/${id}`,
    `mkdir -p "$d" "$HOME/.ssh"`,
    `d=$(cd "$d" && pwd)`,
    // The path goes into an authorized_keys option: nothing in it may end the quoted command.
    `case "$d" in *[!A-Za-z0-9_./+@:-]*) echo ${notPlain} >&2; exit 1;; esac`,
    `printf '%s' ${quote(b64)} | base64 -d > "$d/recv.sh"`,
    `ak="$HOME/.ssh/authorized_keys"`,
    // sshd reads expiry-time in the system time zone (a Z suffix needs OpenSSH 9.1): the node's
    // own clock and zone, as sshd sees them (no TZ of this session).
    `now=$(env -u TZ date +%Y%m%d%H%M)`,
    // Lines of earlier operations whose hour has passed (an operation that was killed) go first.
    `if [ -f "$ak" ]; then awk -v now="$now" ` +
      `'!/ sm121-fanout-/ || !match($0, /expiry-time="[0-9]+"/) || substr($0, RSTART + 13, 12) >= now' ` +
      `"$ak" > "$ak.sm121-tmp"; cat "$ak.sm121-tmp" > "$ak"; rm -f "$ak.sm121-tmp"; fi`,
    `exp=$(env -u TZ date -d '+1 hour' +%Y%m%d%H%M)`,
    `printf 'restrict,command="bash %s/recv.sh",expiry-time="%s" %s\\n' "$d" "$exp" ` +
      `${quote(publicKey.trim())} >> "$ak"`,
    printRecord("recv", '"path":"%s/recv.sh"', '"$d"'),
  ].join("\n");
}

function revokeScript(stateDir: string, id: string): string {
  return [
    `ak="$HOME/.ssh/authorized_keys"`,
    `if [ -f "$ak" ]; then grep -v -F ' sm121-fanout-${id}' "$ak" > "$ak.sm121-tmp" || true; ` +
      `cat "$ak.sm121-tmp" > "$ak"; rm -f "$ak.sm121-tmp"; fi`,
    `rm -rf ${nodePath(stateDir)}/fanout/${id}`,
  ].join("\n");
}

/**
 * The source's script: `producer` (a shell pipeline writing the stream to stdout) piped over ssh
 * into the peer's receiver. Run it on the source's own connection.
 */
export function sendScript(a: Access, g: Grant, producer: string): string {
  const sent = { node: g.peer.host.node, user: g.peer.user, ip: g.peer.ip, port: g.peer.port };
  return [
    "umask 077",
    `k=$(mktemp -d)`,
    `trap 'rm -rf "$k"' EXIT`,
    `cat > "$k/id" <<'SM121_KEY'`,
    a.privateKey.trim(),
    "SM121_KEY",
    `printf '%s\\n' ${knownHostsLine(g)} > "$k/known_hosts"`,
    // The bytes that leave this node, counted on it: the bench's measure of a copy.
    `mkfifo "$k/count"; wc -c < "$k/count" > "$k/sent" & counter=$!`,
    `if ! {\n${producer}\n} | tee "$k/count" | ${sshTo(g, `"$k/id"`, `"$k/known_hosts"`)}; then`,
    `  echo ${shellWords(`sm121: ${t("serve.copySendFailed", sent)}`)} >&2`,
    "  exit 1",
    "fi",
    `wait "$counter"; ${printRecord("sent", '"bytes":%d', '"$(cat "$k/sent")"')}`,
  ].join("\n");
}

/** The bytes a sendScript run says left the source. */
export function sentBytes(records: readonly NodeRecord[]): number {
  return recordsOf(records, "sent").reduce((a, r) => a + r.bytes, 0);
}

/** Bytes, as people read them. */
export function bytesText(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${n} B` : `${v.toFixed(1)} ${units[u] ?? ""}`;
}

/** "1.2 GiB in 3.4 s (360.0 MiB/s)". */
export function rateText(bytes: number, ms: number): string {
  const s = Math.max(ms, 1) / 1000;
  return t("serve.rate", { bytes: bytesText(bytes), seconds: s.toFixed(1), rate: bytesText(Math.round(bytes / s)) });
}

/**
 * Progress of a transfer every `everyS` seconds: `measure` says the bytes done so far (a read on a
 * channel of a connection the operation already has); `total`, when known, gives the ETA.
 * Returns the stop function.
 */
export function meter(
  label: string,
  measure: () => Promise<number>,
  total: number | undefined,
  log: (m: string) => void,
  everyS = 10,
): () => void {
  const t0 = Date.now();
  let stopped = false;
  const tick = async (): Promise<void> => {
    if (stopped) return;
    const done = await measure().catch(() => undefined);
    if (stopped || done === undefined) return;
    const ms = Date.now() - t0;
    const rate = done / Math.max(ms / 1000, 0.001);
    const at = { label, done: bytesText(done), seconds: Math.round(ms / 1000), rate: bytesText(Math.round(rate)) };
    if (total === undefined) return log(t("serve.meter", at));
    const eta = rate > 0 && total > done ? t("serve.eta", { seconds: Math.round((total - done) / rate) }) : "";
    log(t("serve.meterOf", { ...at, total: bytesText(total), eta }));
  };
  const timer = setInterval(() => void tick(), everyS * 1000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}
