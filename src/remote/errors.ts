/**
 * Two kinds of failure, kept apart as pulumi-command does: the host could not be reached (a
 * TransportError) or a script ran and failed (a CommandError). Both name the node and the step.
 */
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

export class TransportError extends Error {
  readonly node: string;
  readonly step: string;
  readonly kind: TransportKind;
  /** What the client saw, without the fix: "connection refused by ops@203.0.113.12:22 (ECONNREFUSED)". */
  readonly detail: string;
  /** Kind `host-key`: why the key was refused, and its fingerprint. */
  readonly hostKey?: HostKeyRefusal;

  constructor(
    node: string,
    step: string,
    detail: string,
    fix: string,
    kind: TransportKind = "other",
    hostKey?: HostKeyRefusal,
  ) {
    super(`node ${node}: ${step}: ${detail}; ${fix}`);
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
  detail: string;
}

/** A connection's failure from Node's or ssh2's error: its kind and what the client saw. */
export function dialFailure(err: Error & { code?: unknown; level?: unknown }, where: string): Dialed {
  const code = typeof err.code === "string" ? err.code : undefined;
  const seen = `${err.message}${code !== undefined && !err.message.includes(code) ? ` (${code})` : ""}`;
  if (err.level === "client-authentication") {
    return { kind: "auth", detail: `the login as ${where} was refused (${err.message})` };
  }
  if (err.level === "client-timeout") {
    return { kind: "timeout", detail: `${where} did not complete the SSH handshake in time (${err.message})` };
  }
  switch (code) {
    case "ENOTFOUND":
    case "EAI_AGAIN":
    case "EAI_NONAME":
    case "EAI_NODATA":
      return { kind: "not-found", detail: `host name of ${where} not found (${seen})` };
    case "ECONNREFUSED":
      return { kind: "refused", detail: `connection to ${where} refused (${seen})` };
    case "ETIMEDOUT":
      return { kind: "timeout", detail: `connecting to ${where} timed out (${seen})` };
    case "EHOSTUNREACH":
    case "ENETUNREACH":
    case "EHOSTDOWN":
      return { kind: "unreachable", detail: `no route to ${where} (${seen})` };
    case "ECONNRESET":
    case "EPIPE":
      return { kind: "lost", detail: `${where} closed the connection (${seen})` };
    default:
      return { kind: "other", detail: `cannot reach ${where}: ${seen}` };
  }
}

/** The fix for each kind, in the site's own terms (the fields of the node's `ssh` block). */
export function transportFix(kind: TransportKind, node: string): string {
  switch (kind) {
    case "auth":
      return (
        "check ssh.user, and that the key sm121 logs in with (sm121:sshPrivateKey, else ssh-agent) " +
        `is in that user's ~/.ssh/authorized_keys on ${node}`
      );
    case "not-found":
      return "fix ssh.host: a name this machine resolves, or the node's address";
    case "refused":
      return `check that sshd runs on ${node} and listens on ssh.port`;
    case "timeout":
    case "unreachable":
      return (
        `check that ${node} is on and reachable from this machine, and ssh.host and ssh.port; ` +
        "run again when it answers"
      );
    case "host-key":
      return "if that is not the machine you meant, fix ssh.host";
    case "key":
      return (
        "set sm121:sshPrivateKey to an OpenSSH or PEM private key " +
        "(pulumi config set --secret sm121:sshPrivateKey < ~/.ssh/id_ed25519), or unset it to use ssh-agent"
      );
    case "lost":
      return `check that ${node} is up and its network stable, then run again`;
    case "other":
      return `check ${node}'s ssh block and that the node is up`;
  }
}

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
export class CommandError extends Error {
  readonly node: string;
  readonly step: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly timedOutS: number | undefined;
  readonly interrupted: boolean;
  readonly stdoutTail: string;
  readonly stderrTail: string;

  constructor(f: CommandFailure) {
    const signal =
      f.exit.signal === null ? null : f.exit.signal.startsWith("SIG") ? f.exit.signal : `SIG${f.exit.signal}`;
    const timedOut = `timed out after ${f.timedOutS ?? 0} s`;
    const ending =
      f.interrupted === true
        ? "was interrupted (Ctrl-C) and stopped; the node keeps what this step had done"
        : f.timedOutS !== undefined
          ? f.exit.code === null && signal === null
            ? `${timedOut}; its channel was closed without an exit status (the node may still be running it)`
            : `${timedOut} and was stopped (${f.exit.code !== null ? `exit code ${f.exit.code}` : `signal ${signal ?? ""}`})`
          : f.exit.code !== null
            ? `exited with code ${f.exit.code}`
            : `was killed by signal ${signal ?? "(unknown)"}`;
    super(`node ${f.node}: ${f.step} ${ending}${section("stderr", f.stderr)}${section("stdout", f.stdout)}`);
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

function section(name: string, tail: string): string {
  return tail === "" ? "" : `\n--- ${name} (last lines) ---\n${tail}`;
}
