/**
 * known_hosts as OpenSSH's ssh reads it (sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT"; hostfile.c,
 * match.c, sshconnect.c): comma-separated host patterns with `*` and `?` and negated `!pattern`,
 * `[host]:port` for a port other than 22, hashed `|1|salt|hash` names, the `@revoked` and
 * `@cert-authority` markers. Host keys are verified by default; accept-new records an unknown key.
 */
import { createHash, createHmac } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";
import type { ServerHostKeyAlgorithm } from "ssh2";
import { msg, type Msg } from "../text/messages";

/** The name a host's keys are filed under: `host`, or `[host]:port` for a port other than 22. */
export function hostPattern(host: string, port: number): string {
  const h = asciiLower(host);
  return port === 22 || port === 0 ? h : `[${h}]:${port}`;
}

/** A line of the file that names the host (whatever its marker). */
export interface KnownEntry {
  line: number;
  marker: "none" | "cert-authority" | "revoked";
  type: string;
  blob: Buffer;
}

type ParsedLine = NonNullable<ReturnType<typeof parseLine>> & { line: number };

/**
 * The file's valid lines, parsed once per text: a plan connects to every node at once, and each
 * connection asks the same file two or three times.
 */
let parsed: { text: string; lines: ParsedLine[] } | undefined;

function parsedLines(text: string): ParsedLine[] {
  if (parsed?.text !== text) {
    const lines: ParsedLine[] = [];
    text.split("\n").forEach((raw, i) => {
      const e = parseLine(raw);
      if (e !== undefined) lines.push({ ...e, line: i + 1 });
    });
    parsed = { text, lines };
  }
  return parsed.lines;
}

/** The valid lines whose host field matches `name`; ssh skips a line it cannot parse. */
function entriesFor(text: string, name: string): KnownEntry[] {
  return parsedLines(text)
    .filter((e) => hostMatches(e.hosts, name))
    .map((e) => ({ line: e.line, marker: e.marker, type: e.type, blob: e.blob }));
}

function parseLine(
  raw: string,
): { marker: KnownEntry["marker"]; hosts: string; type: string; blob: Buffer } | undefined {
  let rest = raw.replace(/^[ \t]+/, "");
  if (rest === "" || rest.startsWith("#")) return undefined;
  let marker: KnownEntry["marker"] = "none";
  // check_markers: one marker at most, ended by the first space (a tab only when there is none).
  if (rest.startsWith("@")) {
    const sp = rest.includes(" ") ? rest.indexOf(" ") : rest.indexOf("\t");
    const word = sp < 0 ? "" : rest.slice(0, sp);
    if (word !== "@cert-authority" && word !== "@revoked") return undefined;
    marker = word === "@revoked" ? "revoked" : "cert-authority";
    rest = rest.slice(sp).replace(/^[ \t]+/, "");
    if (rest.startsWith("@")) return undefined;
  }
  const [hosts = "", type = "", b64 = ""] = rest.split(/[ \t]+/);
  // ssh's base64 decoder skips white space, so a CRLF line still parses.
  const key = b64.replace(/\s+$/, "");
  if (hosts === "" || type.startsWith("#") || !/^[A-Za-z0-9+/]+=*$/.test(key)) return undefined;
  const blob = Buffer.from(key, "base64");
  // ssh parses the key: its type name must be the one inside the blob.
  if (keyTypeOf(blob) !== type) return undefined;
  return { marker, hosts, type, blob };
}

/** match_maybe_hashed: a hashed field is one name; a plain field is a pattern list that must match positively. */
export function hostMatches(hosts: string, name: string): boolean {
  if (hosts.startsWith("|")) return hashedMatches(hosts, name);
  return patternListMatch(asciiLower(name), hosts) === 1;
}

function hashedMatches(field: string, name: string): boolean {
  const m = /^\|1\|([^|]+)\|/.exec(field);
  if (m === null) return false;
  const salt = Buffer.from(m[1] ?? "", "base64");
  // The salt is an HMAC-SHA1 key of 20 bytes; the whole field must equal the name hashed with it.
  if (salt.length !== 20) return false;
  const hash = createHmac("sha1", salt).update(name).digest("base64");
  return field === `|1|${salt.toString("base64")}|${hash}`;
}

/** match_pattern_list: 1 on a positive match, -1 when a negated pattern matches, else 0. */
function patternListMatch(name: string, list: string): 1 | 0 | -1 {
  let positive = false;
  for (const raw of list.split(",")) {
    const negated = raw.startsWith("!");
    const sub = asciiLower(negated ? raw.slice(1) : raw);
    // ssh's subpattern buffer is 1024 bytes; a longer one makes the whole list a non-match.
    if (Buffer.byteLength(sub) >= 1023) return 0;
    if (wildcardMatch(bytes(name), bytes(sub))) {
      if (negated) return -1;
      positive = true;
    }
  }
  return positive ? 1 : 0;
}

/** `*` is any run of bytes (also none), `?` one byte, anything else itself. Linear in practice, never exponential. */
function wildcardMatch(s: string, p: string): boolean {
  let i = 0;
  let j = 0;
  let star = -1;
  let mark = 0;
  while (i < s.length) {
    if (j < p.length && (p[j] === "?" || (p[j] !== "*" && p[j] === s[i]))) {
      i++;
      j++;
    } else if (j < p.length && p[j] === "*") {
      star = j++;
      mark = i;
    } else if (star >= 0) {
      j = star + 1;
      i = ++mark;
    } else return false;
  }
  while (j < p.length && p[j] === "*") j++;
  return j === p.length;
}

/** ssh compares bytes: one `?` is one byte of a UTF-8 name. */
function bytes(s: string): string {
  return Buffer.from(s, "utf8").toString("latin1");
}

function asciiLower(s: string): string {
  return s.replace(/[A-Z]/g, (c) => c.toLowerCase());
}

/** The SHA256 fingerprint as `ssh-keygen -l` prints it. */
export function fingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
}

export function keyTypeOf(keyBlob: Buffer): string {
  if (keyBlob.length < 4) return "";
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString("latin1");
}

/** The host key algorithms (as ssh2 names them) that can present a key of each type. */
const ALGORITHMS_OF: Readonly<Record<string, readonly ServerHostKeyAlgorithm[]>> = {
  "ssh-ed25519": ["ssh-ed25519"],
  "ecdsa-sha2-nistp256": ["ecdsa-sha2-nistp256"],
  "ecdsa-sha2-nistp384": ["ecdsa-sha2-nistp384"],
  "ecdsa-sha2-nistp521": ["ecdsa-sha2-nistp521"],
  "ssh-rsa": ["rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"],
};

/**
 * order_hostkeyalgs: the algorithms of the key types the file knows for the host go first, so
 * that a server with several host keys shows one that the file can vouch for (and a host known
 * by its RSA key is not taken for a changed one because it also has an Ed25519 key).
 */
export function preferredHostKeyAlgorithms(file: string, host: string, port: number): ServerHostKeyAlgorithm[] {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const types = entriesFor(text, hostPattern(host, port))
    .filter((e) => e.marker === "none")
    .map((e) => e.type);
  return [...new Set(types.flatMap((t) => ALGORITHMS_OF[t] ?? []))];
}

/**
 * One host key the file vouches for, as an authorized_keys line (`ssh-ed25519 AAAA...`), for a
 * client that pins a single key (pulumi-command's `connection.hostKey`): the first unmarked line
 * for the host (or, as ssh does for `[host]:port`, for the bare name) whose key is not @revoked.
 */
export function pinnedHostKey(file: string, host: string, port: number): string | undefined {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  for (const name of [...new Set([hostPattern(host, port), hostPattern(host, 22)])]) {
    const entries = entriesFor(text, name);
    const revoked = entries.filter((e) => e.marker === "revoked");
    const ok = entries.find((e) => e.marker === "none" && !revoked.some((r) => r.blob.equals(e.blob)));
    if (ok !== undefined) return `${ok.type} ${ok.blob.toString("base64")}`;
  }
  return undefined;
}

export type HostKeyStatus =
  | { status: "ok"; line: number }
  | { status: "new" }
  | { status: "changed"; known: KnownEntry }
  | { status: "revoked"; line: number };

/**
 * check_hostkeys_by_key_or_type for a plain host key (the only kind ssh2 is offered): only
 * unmarked lines can vouch for it (a `@cert-authority` line signs certificates, it is no host key);
 * any other unmarked key for the name means the key changed, whatever its type; a `@revoked` line
 * with this key refuses it, even when another line accepts it.
 */
export function hostKeyStatus(text: string, name: string, keyBlob: Buffer): HostKeyStatus {
  const entries = entriesFor(text, name);
  const revoked = entries.find((e) => e.marker === "revoked" && e.blob.equals(keyBlob));
  if (revoked !== undefined) return { status: "revoked", line: revoked.line };
  const plain = entries.filter((e) => e.marker === "none");
  const same = plain.find((e) => e.blob.equals(keyBlob));
  if (same !== undefined) return { status: "ok", line: same.line };
  const other = plain.at(-1);
  return other === undefined ? { status: "new" } : { status: "changed", known: other };
}

/** Why a host key was refused: the file has another key, marks this one revoked, or has none. */
export interface HostKeyRefusal {
  status: "changed" | "revoked" | "new";
  /** The presented key's SHA256 fingerprint. */
  fingerprint: string;
}

/** `accepted`: accept-new took an unknown key, appended to the file unless the run records nothing (a preview). */
export type HostKeyVerdict =
  { ok: true; accepted?: { recorded: boolean; words: Msg } } | { ok: false; reason: Msg; refusal: HostKeyRefusal };

/**
 * Checks a presented host key against the file. strict: unknown, changed and revoked keys are
 * refused. accept-new: an unknown host's key is taken, and appended when `record` (a preview
 * records nothing: it says what the up would); a changed or revoked key is still refused.
 */
export function verifyHostKey(
  file: string,
  host: string,
  port: number,
  keyBlob: Buffer,
  mode: "strict" | "accept-new",
  record = true,
): HostKeyVerdict {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const name = hostPattern(host, port);
  const type = keyTypeOf(keyBlob);
  const fp = fingerprint(keyBlob);
  let s = hostKeyStatus(text, name, keyBlob);
  // As ssh does for a new `[host]:port`: a key filed under the bare host name is accepted too.
  if (
    s.status === "new" &&
    name !== hostPattern(host, 22) &&
    hostKeyStatus(text, hostPattern(host, 22), keyBlob).status === "ok"
  )
    s = { status: "ok", line: 0 };
  switch (s.status) {
    case "ok":
      return { ok: true };
    case "revoked":
      return {
        ok: false,
        refusal: { status: "revoked", fingerprint: fp },
        reason: msg("remote.hostKeyRevoked", { type, name, fingerprint: fp, file, line: s.line }),
      };
    case "changed": {
      const known = { line: s.known.line, knownType: s.known.type, knownFingerprint: fingerprint(s.known.blob) };
      return {
        ok: false,
        refusal: { status: "changed", fingerprint: fp },
        reason: msg("remote.hostKeyChanged", { type, name, fingerprint: fp, file, ...known }),
      };
    }
    case "new":
      if (mode === "accept-new") {
        const what = { type, name, fingerprint: fp, file };
        if (!record) return { ok: true, accepted: { recorded: false, words: msg("remote.hostKeyWouldRecord", what) } };
        mkdirSync(dirname(file), { recursive: true });
        appendFileSync(file, `${name} ${type} ${keyBlob.toString("base64")}\n`, { mode: 0o600 });
        return { ok: true, accepted: { recorded: true, words: msg("remote.hostKeyRecorded", what) } };
      }
      return {
        ok: false,
        refusal: { status: "new", fingerprint: fp },
        reason: msg("remote.hostKeyUnknown", { name, file, type, fingerprint: fp, port, host }),
      };
  }
}
