import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { utils } from "ssh2";
import { describe, expect, it } from "vitest";
import { ed25519Pair } from "../src/remote/keypair";
import { testDir } from "./helpers/tmp";

describe("a fresh ed25519 key pair", () => {
  it("is read by ssh2 every time, also when its public key starts with a zero byte (1 key in 256)", () => {
    const pairs = Array.from({ length: 4000 }, (_, i) => ed25519Pair(`c${i}`));
    const publicBytes = (p: { public: string }) => Buffer.from(p.public.split(" ")[1] ?? "", "base64").subarray(19);
    expect(pairs.some((p) => publicBytes(p)[0] === 0)).toBe(true);
    for (const p of pairs) {
      const key = utils.parseKey(p.private);
      if (key instanceof Error) throw key;
      expect(key.type).toBe("ssh-ed25519");
      expect(key.getPublicSSH().toString("base64")).toBe(p.public.split(" ")[1]);
      // The private key signs what its public key verifies.
      const pub = utils.parseKey(p.public);
      if (pub instanceof Error) throw pub;
      expect(pub.verify(Buffer.from("x"), key.sign(Buffer.from("x")))).toBe(true);
    }
  });

  it("is the key OpenSSH derives its public line from, comment included", () => {
    const dir = testDir("sm121-keypair-");
    for (let i = 0; i < 20; i++) {
      const p = ed25519Pair(`sm121-fanout-${i}`);
      const file = join(dir, `k${i}`);
      writeFileSync(file, p.private, { mode: 0o600 });
      const r = spawnSync("ssh-keygen", ["-y", "-f", file], { encoding: "utf8" });
      expect(r.status, r.stderr).toBe(0);
      expect(r.stdout.trim()).toBe(p.public);
    }
  });
});
