/**
 * known_hosts, as OpenSSH reads it: plain and hashed (|1|salt|hash) host patterns, `[host]:port`
 * for non-standard ports. Host keys are verified by default; accept-new records an unknown key.
 */
import { createHash, createHmac } from "node:crypto";
import { appendFileSync, existsSync, mkdirSync, readFileSync } from "node:fs";
import { dirname } from "node:path";

export interface KnownKey {
  type: string;
  key: string; // base64
}

export function hostPattern(host: string, port: number): string {
  return port === 22 ? host : `[${host}]:${port}`;
}

function matches(pattern: string, name: string): boolean {
  if (pattern.startsWith("|1|")) {
    const [, , salt = "", hash = ""] = pattern.split("|");
    const h = createHmac("sha1", Buffer.from(salt, "base64")).update(name).digest("base64");
    return h === hash;
  }
  return pattern.split(",").some((p) => p === name);
}

export function knownKeysFor(text: string, host: string, port: number): KnownKey[] {
  const name = hostPattern(host, port);
  const out: KnownKey[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith("@revoked")) continue;
    const fields = line.replace(/^@cert-authority\s+/, "").split(/\s+/);
    const [patterns = "", type = "", key = ""] = fields;
    if (matches(patterns, name)) out.push({ type, key });
  }
  return out;
}

/** The SHA256 fingerprint as `ssh-keygen -l` prints it. */
export function fingerprint(keyBlob: Buffer): string {
  return `SHA256:${createHash("sha256").update(keyBlob).digest("base64").replace(/=+$/, "")}`;
}

export function keyTypeOf(keyBlob: Buffer): string {
  const len = keyBlob.readUInt32BE(0);
  return keyBlob.subarray(4, 4 + len).toString("ascii");
}

export type HostKeyVerdict = { ok: true; recorded: boolean } | { ok: false; reason: string };

/**
 * Checks a presented host key against the file. strict: unknown and changed keys are refused.
 * accept-new: an unknown host's key is appended; a changed key is still refused.
 */
export function verifyHostKey(file: string, host: string, port: number, keyBlob: Buffer, mode: "strict" | "accept-new"): HostKeyVerdict {
  const text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const known = knownKeysFor(text, host, port);
  const presented = keyBlob.toString("base64");
  const type = keyTypeOf(keyBlob);
  const fp = fingerprint(keyBlob);
  if (known.some((k) => k.key === presented)) return { ok: true, recorded: false };
  const name = hostPattern(host, port);
  if (known.some((k) => k.type === type)) {
    return {
      ok: false,
      reason: `the ${type} host key of ${name} has CHANGED (now ${fp}); this may be an attack, or the node was reinstalled. If you know why, remove the old line with \`ssh-keygen -R '${name}' -f ${file}\` and connect again`,
    };
  }
  if (mode === "accept-new") {
    mkdirSync(dirname(file), { recursive: true });
    appendFileSync(file, `${name} ${type} ${presented}\n`, { mode: 0o600 });
    return { ok: true, recorded: true };
  }
  return {
    ok: false,
    reason: `${name} is not in ${file} (its ${type} key is ${fp}). Check the fingerprint on the node (\`ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub\`), then add it with \`ssh-keyscan -p ${port} ${host} >> ${file}\`, or set sm121:hostKeys: accept-new for one run`,
  };
}
