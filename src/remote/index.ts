/** Connecting to a node of a bundle: local or ssh, with the operation's auth settings. */
import type { NodeConn } from "../render/types";
import { msg, SaidError } from "../text/messages";
import type { Host, LockChannel, StepChannel } from "./host";
import { LocalHost } from "./local";
import { runName, waitingMessage } from "./lock";
import { CONNECTION_DEFAULTS, connectSsh, type SshAuth } from "./ssh";

export type { Host, RunOptions, RunResult, StepChannel } from "./host";
export type { SshAuth } from "./ssh";
export { CommandError, TransportError } from "./errors";
export { NodeBusyError, runName } from "./lock";
export { ed25519Pair } from "./keypair";

export function connect(node: string, conn: NodeConn, auth: SshAuth): Promise<Host> {
  if (conn.kind === "local") return Promise.resolve(new LocalHost(node));
  return connectSsh({ node, host: conn.host, port: conn.port, user: conn.user }, auth);
}

/**
 * One connection and one channel per node for the looks of one operation (the fabric look, the
 * plan-time look, the files sm121 keeps on a node): the first look at a node dials it and opens
 * the channel, every look's script runs on that channel in turn (StepChannel), or fails with the
 * connection's failure, and the operation closes them all at its end.
 */
export class Dialer {
  private readonly dialed = new Map<string, Promise<{ host: Host; steps: StepChannel }>>();
  /** What logged in to each node (./login), kept after close. */
  private readonly logins = new Map<string, string>();

  constructor(readonly auth: SshAuth) {}

  /** The node's connection; a caller's close() leaves it open for the others (see close). */
  host(node: string, conn: NodeConn): Promise<Host> {
    let dialing = this.dialed.get(node);
    if (dialing === undefined) {
      dialing = connect(node, conn, this.auth).then((host) => ({ host, steps: host.steps() }));
      this.dialed.set(node, dialing);
      dialing.then(
        ({ host }) => void (host.login !== undefined && this.logins.set(node, host.login)),
        () => undefined,
      );
    }
    return dialing.then(({ host, steps }) => shared(host, steps));
  }

  /**
   * The key files' material that logged in to a node of this operation, for the operations that
   * follow it (the providers get it as a secret input; the agent's keys stay in the agent).
   */
  usedKeyFiles(): string[] {
    const used = new Set(this.logins.values());
    return (this.auth.keyFiles ?? []).filter((k) => used.has(k.from)).map((k) => k.privateKey);
  }

  close(): void {
    for (const d of this.dialed.values())
      d.then(
        ({ host, steps }) => {
          steps.close();
          host.close();
        },
        () => undefined,
      ).catch(() => undefined);
    this.dialed.clear();
  }
}

/** A connection that its users share, its scripts on the one channel: their close() is the Dialer's to do. */
function shared(h: Host, steps: StepChannel): Host {
  return {
    node: h.node,
    ...(h.hostKey !== undefined && { hostKey: h.hostKey }),
    ...(h.login !== undefined && { login: h.login }),
    run: (script, o) => steps.run(script, o),
    lock: (owner, waitS, onWait) => h.lock(owner, waitS, onWait),
    steps: () => ({ run: (script, o) => steps.run(script, o), close: () => undefined }),
    close: () => undefined,
  };
}

/** The operation's connection to `node` (every node of a withHosts call has one). */
export function hostFor(hosts: ReadonlyMap<string, Host>, node: string): Host {
  const h = hosts.get(node);
  if (h === undefined) throw new SaidError(msg("remote.noConnection", { node }));
  return h;
}

/** The host whose steps run on its lock channel. */
function onLock(h: Host, l: LockChannel): Host {
  return {
    node: h.node,
    run: (script, o) => l.run(script, o),
    lock: (owner, waitS, onWait) => h.lock(owner, waitS, onWait),
    steps: () => ({ run: (script, o) => l.run(script, o), close: () => undefined }),
    close: () => h.close(),
  };
}

/**
 * Runs `fn` with one connection per node, all nodes in parallel, closing every connection after.
 * `lock`: hold every node's lock first; `log` says whom the operation waits for, at once, and a dial
 * tried again.
 */
export async function withHosts<T>(
  nodes: ReadonlyArray<{ node: string; conn: NodeConn }>,
  auth: SshAuth,
  fn: (hosts: Map<string, Host>) => Promise<T>,
  opts: { lock?: boolean; log?: (message: string) => void } = {},
): Promise<T> {
  // A dial tried again is said where the operation says whom it waits for.
  const dial = opts.log === undefined ? auth : { ...auth, onRetry: opts.log };
  const settled = await Promise.allSettled(nodes.map((n) => connect(n.node, n.conn, dial)));
  const locks = new Map<string, LockChannel>();
  const hosts = new Map<string, Host>();
  settled.forEach((s) => {
    if (s.status === "fulfilled") hosts.set(s.value.node, s.value);
  });
  let steps = hosts;
  try {
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === "rejected");
    if (failed !== undefined) throw failed.reason instanceof Error ? failed.reason : new Error(String(failed.reason));
    if (opts.lock === true) {
      // An operation that changes nodes holds every node's lock, all taken before any step runs.
      const owner = auth.owner ?? runName(undefined);
      const waitS = auth.lockWaitS ?? CONNECTION_DEFAULTS.lockWaitS;
      for (const h of hosts.values()) {
        locks.set(
          h.node,
          h.lock(owner, waitS, (holder) => opts.log?.(waitingMessage(h.node, holder, waitS))),
        );
      }
      const taken = await Promise.allSettled([...locks.values()].map((l) => l.acquired));
      const busy = taken.find((t): t is PromiseRejectedResult => t.status === "rejected");
      if (busy !== undefined) throw busy.reason instanceof Error ? busy.reason : new Error(String(busy.reason));
      // Every step then runs on its node's lock channel (see ./held).
      steps = new Map([...locks].map(([n, l]) => [n, onLock(hostFor(hosts, n), l)]));
    }
    return await fn(steps);
  } finally {
    for (const l of locks.values()) l.release();
    for (const h of hosts.values()) h.close();
  }
}
