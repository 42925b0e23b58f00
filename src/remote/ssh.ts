/**
 * host: ssh — one ssh2 connection per host per operation, host key verified against known_hosts
 * (strict by default), bounded dial retries with a per-dial timeout.
 */
import type { AnyAuthMethod, AuthHandlerMiddleware, Client, ClientChannel, ConnectConfig } from "ssh2";
import { msg, say, type Msg } from "../text/messages";
import { dialFailure, FINAL_KINDS, TransportError, transportFix } from "./errors";
import {
  Collector,
  interruptedBefore,
  stepScript,
  type Host,
  type LockChannel,
  type RunOptions,
  type RunResult,
  type StepChannel,
} from "./host";
import { preferredHostKeyAlgorithms, verifyHostKey, type HostKeyRefusal } from "./knownhosts";
import { driveSteps } from "./held";
import { driveLock, type LockIo } from "./lock";
import { AGENT, STACK_KEY, type KeyOffer } from "./login";

export interface SshTarget {
  node: string;
  host: string;
  port: number;
  user: string;
}

/**
 * The defaults of a connection, each used where its setting is not given (SshAuth, and the stack's
 * ConnectionSettings in providers/settings): one place, as pulumi-command documents its own.
 */
export const CONNECTION_DEFAULTS = {
  /** How long one dial may take to the end of the SSH handshake and login (ssh2's readyTimeout). */
  dialTimeoutMs: 10_000,
  /**
   * How many times a node is dialled before the operation fails; a refused host key, a refused login
   * or an unknown name are final at once.
   */
  dialAttempts: 3,
  /** The wait before dial n + 1, times n: for the node's sshd to answer (after a reboot, a full accept queue). */
  dialBackoffMs: 300,
  /** SSH keepalives on an open connection, so that a NAT or firewall keeps a quiet one. */
  keepaliveIntervalMs: 15_000,
  /** How long an operation that changes nodes waits for a node lock another one holds (sm121:lockWaitS). */
  lockWaitS: 60,
} as const;

export interface SshAuth {
  /** The private key offered first (PEM/OpenSSH text): the stack's secret sm121:sshPrivateKey. */
  privateKey?: string;
  passphrase?: string;
  /** The ssh-agent socket offered next; default $SSH_AUTH_SOCK, "" for none. */
  agent?: string;
  /** The keys offered after the agent, in order (./login: the key files OpenSSH would try). */
  keyFiles?: readonly KeyOffer[];
  knownHosts: string;
  hostKeys: "strict" | "accept-new";
  /** Default CONNECTION_DEFAULTS.dialTimeoutMs. */
  dialTimeoutMs?: number;
  /** Default CONNECTION_DEFAULTS.dialAttempts. */
  dialAttempts?: number;
  /** Who holds a node lock this operation takes; default runName (e.g. "stack prod (ci@runner-b, pid 4242)"). */
  owner?: string;
  /** How long to wait for a busy node before failing; default CONNECTION_DEFAULTS.lockWaitS. */
  lockWaitS?: number;
  /** Whether accept-new writes a key it takes into knownHosts (default true; a preview: false). */
  recordHostKeys?: boolean;
  /** Where a failed dial that is tried again is said, with what the next dial waits for (default: not said). */
  onRetry?: (message: string) => void;
  /** Where a host key accept-new takes is shown (default: stderr), once per key and process. */
  onHostKey?: (message: string) => void;
}

/** Host keys accept-new took in this process, already shown. */
const shownHostKeys = new Set<string>();

function showAccepted(auth: SshAuth, said: Msg): void {
  const words = say(said);
  if (shownHostKeys.has(words)) return;
  shownHostKeys.add(words);
  if (auth.onHostKey !== undefined) auth.onHostKey(words);
  else process.stderr.write(`sm121: ${words}\n`);
}

export async function connectSsh(t: SshTarget, auth: SshAuth): Promise<Host> {
  const attempts = auth.dialAttempts ?? CONNECTION_DEFAULTS.dialAttempts;
  let last: Error | undefined;
  for (let i = 1; i <= attempts; i++) {
    try {
      return await dialOnce(t, auth);
    } catch (e) {
      last = e instanceof Error ? e : new Error(String(e));
      // A refused host key, a refused login or an unknown name will not get better by trying again;
      // anything else (a refused or timed-out dial) waits for the node's sshd to answer again.
      if (last instanceof TransportError && FINAL_KINDS.has(last.kind)) throw last;
      if (i < attempts) {
        const ms = CONNECTION_DEFAULTS.dialBackoffMs * i;
        const why = last instanceof TransportError ? say(last.detail) : last.message;
        auth.onRetry?.(say(msg("remote.dialRetry", { node: t.node, attempt: i, attempts, why, ms })));
        await new Promise((r) => setTimeout(r, ms));
      }
    }
  }
  throw last ?? new Error("unreachable");
}

function dialOnce(t: SshTarget, auth: SshAuth): Promise<Host> {
  // Loaded here, not at module scope: this module may be reached from a serialized provider.
  const { Client: SshClient, utils } = require("ssh2") as typeof import("ssh2");
  // The stack's key is the operator's choice: one ssh2 cannot read is its fault, not the node's.
  const parsed = auth.privateKey === undefined ? undefined : utils.parseKey(auth.privateKey, auth.passphrase);
  if (parsed instanceof Error) {
    const detail = msg("remote.keyUnusable", { why: `Cannot parse privateKey: ${parsed.message}` });
    return Promise.reject(new TransportError(t.node, "connect", detail, transportFix("key", t.node), "key"));
  }
  const client: Client = new SshClient();
  let refusal: { reason: Msg; refusal: HostKeyRefusal } | undefined;
  let verified = "";
  const known = preferredHostKeyAlgorithms(auth.knownHosts, t.host, t.port);
  const offers = authMethods(t.user, auth);
  let tried = 0;
  let login = "";
  // Each way in turn, as OpenSSH offers them; `false` ends the login (ssh2 reads a returned value).
  const next = (): AnyAuthMethod | false => {
    const o = offers[tried++];
    if (o === undefined) return false;
    login = o.from;
    return o.method;
  };
  const handler: AuthHandlerMiddleware = next;
  const config: ConnectConfig = {
    host: t.host,
    port: t.port,
    username: t.user,
    readyTimeout: auth.dialTimeoutMs ?? CONNECTION_DEFAULTS.dialTimeoutMs,
    keepaliveInterval: CONNECTION_DEFAULTS.keepaliveIntervalMs,
    hostVerifier: (key: Buffer) => {
      const v = verifyHostKey(auth.knownHosts, t.host, t.port, key, auth.hostKeys, auth.recordHostKeys ?? true);
      if (!v.ok) refusal = v;
      else {
        verified = keyLine(key);
        if (v.accepted !== undefined) showAccepted(auth, v.accepted.words);
      }
      return v.ok;
    },
    // Moved to the front: ssh2 keeps its own order for what is already in its list.
    ...(known.length > 0 && { algorithms: { serverHostKey: { remove: known, prepend: known, append: [] } } }),
    // Straight to the keys (./login's order): without a list ssh2 first asks for "none", a round
    // trip per connection that a node taking only keys refuses anyway.
    authHandler: handler,
  };
  return new Promise((resolve, reject) => {
    client.once("ready", () => resolve(new SshHost(t.node, client, verified, login)));
    // `on`, not `once`: ssh2 may emit a second error after the first (a refused host key, then
    // "Connection lost before handshake"); once settled, the promise ignores it.
    client.on("error", (err: Error) => {
      const where = `${t.user}@${t.host}:${t.port}`;
      if (refusal !== undefined) {
        const detail = msg("remote.hostKeyRefused", { where, reason: refusal.reason });
        const fix = transportFix("host-key", t.node);
        reject(new TransportError(t.node, "connect", detail, fix, "host-key", refusal.refusal));
        return;
      }
      const f = dialFailure(err, where);
      reject(new TransportError(t.node, "connect", f.detail, transportFix(f.kind, t.node), f.kind));
    });
    try {
      client.connect(config);
    } catch (e) {
      const f = dialFailure(e instanceof Error ? e : new Error(String(e)), `${t.user}@${t.host}:${t.port}`);
      reject(new TransportError(t.node, "connect", f.detail, transportFix(f.kind, t.node), f.kind));
      return;
    }
    // Without TCP_NODELAY each small write after an unacknowledged one waits for the peer's
    // delayed ACK (40 ms on Linux): the userauth request, and a script's EOF after its text, so
    // every connection and every `bash -s` step paid it. SSH packets are whole messages already.
    client.setNoDelay(true);
  });
}

/** A host key blob (the SSH wire format: its type name first) as a known_hosts key field. */
function keyLine(blob: Buffer): string {
  const len = blob.length >= 4 ? blob.readUInt32BE(0) : 0;
  return `${blob.subarray(4, 4 + len).toString("latin1")} ${blob.toString("base64")}`;
}

/** The ways a login offers, in order: the stack's key, the agent, the key files. */
function authMethods(username: string, auth: SshAuth): Array<{ from: string; method: AnyAuthMethod }> {
  const agent = auth.agent ?? process.env["SSH_AUTH_SOCK"] ?? "";
  const key = (privateKey: string): AnyAuthMethod => ({
    type: "publickey",
    username,
    key: privateKey,
    ...(auth.passphrase !== undefined && { passphrase: auth.passphrase }),
  });
  return [
    ...(auth.privateKey === undefined ? [] : [{ from: STACK_KEY, method: key(auth.privateKey) }]),
    ...(agent === "" ? [] : [{ from: AGENT, method: { type: "agent" as const, username, agent } }]),
    ...(auth.keyFiles ?? []).map((k) => ({ from: k.from, method: key(k.privateKey) })),
  ];
}

class SshHost implements Host {
  constructor(
    readonly node: string,
    private readonly client: Client,
    readonly hostKey: string,
    /** What logged in: "sm121:sshPrivateKey", "ssh-agent" or a key file ("~/.ssh/id_ed25519"). */
    readonly login: string,
  ) {}

  run(script: string, opts: RunOptions): Promise<RunResult> {
    return new Promise((resolve, reject) => {
      const stopped = interruptedBefore(this.node, opts.step);
      if (stopped !== undefined) {
        reject(stopped);
        return;
      }
      this.client.exec("bash -s", (err, stream) => {
        if (err) {
          const detail = msg("remote.channelFailed", { why: err.message });
          reject(new TransportError(this.node, opts.step, detail, transportFix("lost", this.node), "lost"));
          return;
        }
        const c = new Collector(opts);
        let settled = false;
        const settle = (code: unknown, signal: unknown) => {
          if (settled) return;
          settled = true;
          cancel();
          try {
            resolve(
              c.finish(this.node, {
                code: typeof code === "number" ? code : null,
                signal: typeof signal === "string" ? signal : null,
              }),
            );
          } catch (e) {
            reject(e instanceof Error ? e : new Error(String(e)));
          }
        };
        // sshd delivers the signal to the script's process group. A forced-command login refuses
        // signals, and sshd keeps a closed channel open until its command ends: the step ends here.
        const cancel = c.clock(() => {
          stream.signal("KILL");
          stream.close();
          settle(null, null);
        });
        stream.on("data", (d: Buffer) => c.out(d));
        stream.stderr.on("data", (d: Buffer) => c.err(d));
        stream.on("close", settle);
        stream.end(stepScript(script));
      });
    });
  }

  lock(owner: string, waitS: number, onWait?: (holder: string) => void): LockChannel {
    return driveLock(this.node, owner, waitS, this.channel("lock"), onWait);
  }

  steps(): StepChannel {
    return driveSteps(this.node, this.channel("look"));
  }

  /** A `bash -s` channel whose input the caller writes as it goes (the lock's, the steps'). */
  private channel(step: string): Promise<LockIo> {
    return new Promise<LockIo>((resolve, reject) => {
      this.client.exec("bash -s", (err, stream: ClientChannel) => {
        if (err) {
          const detail = msg("remote.channelFailed", { why: err.message });
          reject(new TransportError(this.node, step, detail, transportFix("lost", this.node), "lost"));
          return;
        }
        resolve({
          write: (t) => void stream.write(t),
          end: () => void stream.end(),
          // As run's timeout: the signal where sshd takes it, and the channel closed either way.
          kill: () => {
            stream.signal("KILL");
            stream.close();
          },
          onOut: (cb) => void stream.on("data", (d: Buffer) => cb(d)),
          onErr: (cb) => void stream.stderr.on("data", (d: Buffer) => cb(d)),
          onClose: (cb) => void stream.on("close", (code: unknown) => cb(typeof code === "number" ? code : null)),
        });
      });
    });
  }

  close(): void {
    this.client.end();
  }
}
