/**
 * Host keys are verified by default: an unknown key is refused with its fingerprint and how to
 * accept it; accept-new records it, showing each key it records (a preview records none and shows
 * what the up would); a changed key is refused even then.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

/** The node's host key fingerprint as OpenSSH's ssh-keygen prints it. */
function fingerprintOf(n: SimNode): string {
  const pub = join(n.root, "etc", "ssh", "ssh_host_ed25519_key.pub");
  return spawnSync("ssh-keygen", ["-lf", pub], { encoding: "utf8" }).stdout.split(" ")[1] ?? "";
}

// The tests run in order on one site, each from the state the one before left.
describe.sequential("host keys", () => {
  let e: E2E;
  let kh: string;
  const stack = (mode: string) =>
    [
      "config:",
      `  sm121:knownHosts: ${kh}`,
      `  sm121:hostKeys: ${mode}`,
      "  sm121:minMemAvailableGiB: 1",
      nodesYaml(e.site),
      "  sm121:deployments:",
      "    - { recipe: tiny, nodes: [k1] }",
      "",
    ].join("\n");
  beforeAll(async () => {
    e = await e2eProject({
      name: "hostkeys",
      nodes: ["k1", "k2"],
      ...AT.site(),
      recipes: {
        "tiny.toml":
          'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-0.6B"\n' +
          'image = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n',
      },
      config: () => "",
    });
    kh = join(e.site.dir, "operator_known_hosts");
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses an unknown host key, naming its fingerprint and how to accept it", async () => {
    writeFileSync(kh, "");
    e.writeStack(stack("strict"));
    const up = await e.up();
    expect(up.code).not.toBe(0);
    const n = e.site.nodes[0] as SimNode;
    expect(up.all).toMatch(
      new RegExp(
        `\\[${n.ip.replace(/\./g, "\\.")}\\]:${n.sshPort} is not in ${kh.replace(/[/.]/g, "\\$&")} \\(its ` +
          `ssh-ed25519 key is SHA256:[A-Za-z0-9+/]{43}\\)`,
      ),
    );
    expect(up.all).toContain(`ssh-keyscan -p ${n.sshPort} ${n.ip} >> ${kh}`);
    expect(readFileSync(kh, "utf8")).toBe("");
  });

  it("previews accept-new without recording: it shows each key the up would record", async () => {
    e.writeStack(stack("accept-new"));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(readFileSync(kh, "utf8")).toBe("");
    for (const n of e.site.nodes) {
      const key = `the ssh-ed25519 host key of [${n.ip}]:${n.sshPort} (${fingerprintOf(n)}) in ${kh}`;
      expect(preview.all).toContain(`would record ${key}`);
    }
  });

  it("records the key with accept-new, shows what it recorded, then verifies it", async () => {
    e.writeStack(stack("accept-new"));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    for (const n of e.site.nodes) {
      expect(up.all).toContain(
        `recorded the ssh-ed25519 host key of [${n.ip}]:${n.sshPort} (${fingerprintOf(n)}) in ${kh}`,
      );
    }
    const n = e.site.nodes[0] as SimNode;
    // Every node of the site is recorded: the plan-time look reads each one, also k2 (no deployment).
    expect(readFileSync(kh, "utf8")).toMatch(
      new RegExp(`^\\[${n.ip.replace(/\./g, "\\.")}\\]:${n.sshPort} ssh-ed25519 AAAA`, "m"),
    );
    e.writeStack(stack("strict"));
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
  });

  it("refuses a changed host key, also with accept-new", async () => {
    const n1 = e.site.nodes[0] as SimNode;
    const n2 = e.site.nodes[1] as SimNode;
    // k1's entry now carries k2's key: what a man in the middle (or a reinstall) looks like.
    const k2key =
      readFileSync(e.site.knownHosts, "utf8")
        .split("\n")
        .find((l) => l.startsWith(`[${n2.ip}]`))
        ?.split(" ")
        .slice(1)
        .join(" ") ?? "";
    writeFileSync(kh, `[${n1.ip}]:${n1.sshPort} ${k2key}\n`);
    e.writeStack(stack("accept-new"));
    const up = await e.destroy();
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(`the ssh-ed25519 host key of [${n1.ip}]:${n1.sshPort} has CHANGED`);
    expect(up.all).toContain(`ssh-keygen -R '[${n1.ip}]:${n1.sshPort}' -f ${kh}`);
    expect(existsSync(kh)).toBe(true);
  });
});
