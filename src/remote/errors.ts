/**
 * Two kinds of failure, kept apart as pulumi-command does: the host could not be reached (a
 * TransportError) or a script ran and failed (a CommandError). Both name the node and the step.
 */
import { msg, SaidError, type MessageKey, type Msg } from "../text/messages";
import type { HostKeyRefusal } from "./knownhosts";

/**
 * Why a node could not be reached, as the SSH client saw it: a typed field, so that no caller reads
 * the message's wording to decide (the retry rule, the CLI's report, the plan-time look's fix).
 * - `auth`: sshd refused the login (a wrong user, or a key it does not accept);
 * - `not-found`: the host name does not resolve;
 * - `refused`: nothing listens on the port (sshd not running, or another port);
 * - `timeout`: no answer in time (the node is down, or a firewall drops the packets);
 * - `unreachable`: no route to the address;
 * - `host-key`: the node's host key is not the one known_hosts holds (or none is held);
 * - `key`: the private key sm121 logs in with cannot be read (malformed, or a wrong passphrase);
 * - `lost`: the connection ended in the middle of an operation;
 * - `other`: anything else (the message says what).
 */
export type TransportKind =
  "auth" | "not-found" | "refused" | "timeout" | "unreachable" | "host-key" | "key" | "lost" | "other";

/** The kinds a second dial cannot mend: the answer is the same, or the refusal is meant. */
export const FINAL_KINDS: ReadonlySet<TransportKind> = new Set(["auth", "host-key", "key", "not-found"]);

export class TransportError extends SaidError {
  readonly node: string;
  readonly step: string;
  readonly kind: TransportKind;
  /** What the client saw, without the fix: "connection to ops@203.0.113.12:22 refused (ECONNREFUSED)". */
  readonly detail: Msg;
  /** Kind `host-key`: why the key was refused, and its fingerprint. */
  readonly hostKey?: HostKeyRefusal;

  constructor(
    node: string,
    step: string,
    detail: Msg,
    fix: Msg,
    kind: TransportKind = "other",
    hostKey?: HostKeyRefusal,
  ) {
    super(msg("remote.transport", { node, step, detail, fix }));
    this.name = "TransportError";
    this.node = node;
    this.step = step;
    this.kind = kind;
    this.detail = detail;
    if (hostKey !== undefined) this.hostKey = hostKey;
  }
}

/** What a dial that failed saw. */
interface Dialed {
  kind: TransportKind;
  detail: Msg;
}

/**
 * A connection's failure from Node's or ssh2's error: its kind and what the client saw (the
 * client's own words stay as it said them).
 */
export function dialFailure(err: Error & { code?: unknown; level?: unknown }, where: string): Dialed {
  const code = typeof err.code === "string" ? err.code : undefined;
  const seen = `${err.message}${code !== undefined && !err.message.includes(code) ? ` (${code})` : ""}`;
  const dialed = (kind: TransportKind, key: MessageKey, s = seen): Dialed => ({
    kind,
    detail: msg(key, { where, seen: s }),
  });
  if (err.level === "client-authentication") return dialed("auth", "remote.dialAuth", err.message);
  if (err.level === "client-timeout") return dialed("timeout", "remote.dialHandshake", err.message);
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
    case "EAI_NODATA":
      return dialed("not-found", "remote.dialNotFound");
    case "ECONNREFUSED":
      return dialed("refused", "remote.dialRefused");
    case "ETIMEDOUT":
      return dialed("timeout", "remote.dialTimeout");
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EHOSTDOWN":
      return dialed("unreachable", "remote.dialUnreachable");
    case "ECONNRESET":
    case "EPIPE":
      return dialed("lost", "remote.dialLost");
    default:
      return dialed("other", "remote.dialOther");
  }
}

/** The fix for each kind, in the site's own terms (the fields of the node's `ssh` block). */
export function transportFix(kind: TransportKind, node: string): Msg {
  return msg(FIXES[kind], { node });
}

const FIXES = {
  auth: "remote.fixAuth",
  "not-found": "remote.fixNotFound",
  refused: "remote.fixRefused",
  timeout: "remote.fixUnreachable",
  unreachable: "remote.fixUnreachable",
  "host-key": "remote.fixHostKey",
  key: "remote.fixKey",
  lost: "remote.fixLost",
  other: "remote.fixOther",
} as const satisfies Record<TransportKind, MessageKey>;

/** How a script ended: its exit code, or the signal that ended it (ssh names it without "SIG"). */
export interface Exit {
  code: number | null;
  signal: string | null;
}

export interface CommandFailure {
  node: string;
  step: string;
  exit: Exit;
  /** Set when sm121 stopped the script because its time ran out. */
  timedOutS?: number;
  /** Set when sm121 stopped the script for the operator's Ctrl-C (remote/cancel). */
  interrupted?: boolean;
  /** The last lines of each stream. */
  stdout: string;
  stderr: string;
}

/** A step that ran and failed, with the evidence: how it ended and the tails of both streams. */
export class CommandError extends SaidError {
  readonly node: string;
  readonly step: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOutS: number | undefined;
  readonly interrupted: boolean;
  readonly stdoutTail: string;
  readonly stderrTail: string;
  /** How the step ended, without the streams' tails: one line (the plan-time look's account of a node). */
  readonly headline: Msg;

  constructor(f: CommandFailure) {
    const signal =
      f.exit.signal === null ? null : f.exit.signal.startsWith("SIG") ? f.exit.signal : `SIG${f.exit.signal}`;
    const ended = (stderr: string | Msg, stdout: string | Msg): Msg => {
      const where = { node: f.node, step: f.step, stderr, stdout };
      const timedOut = { ...where, seconds: f.timedOutS ?? 0 };
      if (f.interrupted === true) return msg("remote.interrupted", where);
      if (f.timedOutS !== undefined) {
        if (f.exit.code !== null) return msg("remote.timedOutCode", { ...timedOut, code: f.exit.code });
        if (signal !== null) return msg("remote.timedOutSignal", { ...timedOut, signal });
        return msg("remote.timedOutNoStatus", timedOut);
      }
      if (f.exit.code !== null) return msg("remote.exited", { ...where, code: f.exit.code });
      return msg("remote.killed", { ...where, signal: signal ?? "?" });
    };
    super(ended(section("stderr", f.stderr), section("stdout", f.stdout)));
    this.headline = ended("", "");
    this.name = "CommandError";
    this.node = f.node;
    this.step = f.step;
    this.code = f.exit.code;
    this.signal = signal;
    this.timedOutS = f.timedOutS;
    this.interrupted = f.interrupted === true;
    this.stdoutTail = f.stdout;
    this.stderrTail = f.stderr;
  }
}

/** A stream's last lines under a heading, or nothing (what the node printed stays as it printed it). */
function section(stream: string, tail: string): string | Msg {
  return tail === "" ? "" : msg("remote.tail", { stream, tail });
}
