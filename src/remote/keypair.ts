/**
 * A fresh ed25519 key pair in OpenSSH's own formats: the private key as `ssh-keygen` writes it
 * (openssh-key-v1, not encrypted) and the public key as an authorized_keys line.
 *
 * Node's crypto makes the key; the encoding is written here because ssh2's `generateKeyPairSync`
 * drops the leading zero bytes of the 32-byte public key, so about one key in 256 it makes is one
 * that neither ssh2 nor OpenSSH can read ("Malformed OpenSSH private key", "error in libcrypto").
 */
import { generateKeyPairSync, randomBytes } from "node:crypto";

export interface KeyPair {
  /** The authorized_keys line: `ssh-ed25519 <base64> <comment>`. */
  public: string;
  /** The private key file's text. */
  private: string;
}

const TYPE = "ssh-ed25519";

export function ed25519Pair(comment = ""): KeyPair {
  const jwk = generateKeyPairSync("ed25519").privateKey.export({ format: "jwk" });
  const pub = Buffer.from(jwk.x ?? "", "base64url");
  const seed = Buffer.from(jwk.d ?? "", "base64url");
  const pubBlob = Buffer.concat([str(TYPE), str(pub)]);
  const check = randomBytes(4);
  const body = Buffer.concat([check, check, str(TYPE), str(pub), str(Buffer.concat([seed, pub])), str(comment)]);
  // Padded with 1, 2, 3, ... to the cipher's block size (8 for "none").
  const pad = Buffer.from(Array.from({ length: (8 - (body.length % 8)) % 8 }, (_, i) => i + 1));
  const file = Buffer.concat([
    Buffer.from("openssh-key-v1\0", "latin1"),
    str("none"),
    str("none"),
    str(""),
    u32(1),
    str(pubBlob),
    str(Buffer.concat([body, pad])),
  ]);
  const lines = file.toString("base64").match(/.{1,70}/g) ?? [];
  return {
    public: [TYPE, pubBlob.toString("base64"), comment].filter((w) => w !== "").join(" "),
    private: ["-----BEGIN OPENSSH PRIVATE KEY-----", ...lines, "-----END OPENSSH PRIVATE KEY-----", ""].join("\n"),
  };
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(n);
  return b;
}

/** An SSH wire string: its length, then its bytes. */
function str(s: string | Buffer): Buffer {
  const b = typeof s === "string" ? Buffer.from(s, "utf8") : s;
  return Buffer.concat([u32(b.length), b]);
}
