/**
 * The command provider plugin, through the real Pulumi CLI, in a project whose node_modules holds
 * exactly the packages of package-lock.json (what `npm ci` installs): `@pulumi/command` 1.2.1 is a
 * dependency, so `pulumi about` lists its plugin; the plugin itself cannot be fetched here (see
 * docs/toolchain.md), and the default hooks mode needs none, while `sm121:hooks: pulumi-command`
 * without it fails with Pulumi's own error, which names the plugin and its version. (The mode's
 * registrations are tested under Pulumi's mocks in test/recipe-component.test.ts; its arguments
 * compile against the package's own types in src/components/hookCommands.ts.)
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO } from "../helpers/project";
import { pulumiEnv, type PulumiEnv } from "../helpers/pulumi";

const RECIPE =
  'engine = "vllm"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n[hooks]\nbefore_serve = ["true"]\n';
// A documentation address (RFC 5737): no node answers there, and no run waits for one.
const STACK = [
  "config:",
  "  sm121:nodes:",
  "    spark1:",
  "      ssh: { host: 192.0.2.1, user: ops }",
  "      ip: 192.0.2.1",
  "  sm121:deployments:",
  "    - { name: hooked, recipe: hooked, nodes: [spark1] }",
  "",
].join("\n");
const KEY = "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl";
const NO_PLUGIN = "no resource plugin 'pulumi-resource-command' found in the workspace at version v1.2.1";

/** The top-level packages package-lock.json installs (`node_modules/<name>`, not nested ones). */
function lockedPackages(): Record<string, string> {
  const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as {
    packages: Record<string, { version?: string }>;
  };
  return Object.fromEntries(
    Object.entries(lock.packages)
      .filter(([k]) => /^node_modules\/(@[^/]+\/)?[^/@]+$/.test(k))
      .map(([k, v]) => [k.slice("node_modules/".length), v.version ?? ""]),
  );
}

describe.sequential("the command provider plugin", () => {
  let dir: string;
  let pulumi: PulumiEnv;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sm121-plugins-"));
    const project = join(dir, "project");
    mkdirSync(join(project, "recipes"), { recursive: true });
    for (const f of ["Pulumi.yaml", "package.json", "package-lock.json"]) cpSync(join(REPO, f), join(project, f));
    // A build of its own: a linked one would find this checkout's node_modules.
    cpSync(join(REPO, "dist"), join(project, "dist"), { recursive: true });
    for (const name of Object.keys(lockedPackages())) {
      const to = join(project, "node_modules", name);
      if (!existsSync(join(REPO, "node_modules", name))) continue;
      mkdirSync(dirname(to), { recursive: true });
      symlinkSync(join(REPO, "node_modules", name), to);
    }
    writeFileSync(join(project, "recipes", "hooked.toml"), RECIPE);
    writeFileSync(join(project, "known_hosts"), `192.0.2.1 ssh-ed25519 ${KEY}\n`);
    pulumi = pulumiEnv(project, join(dir, "pulumi"));
    const init = await pulumi.run(["stack", "init", "s"]);
    expect(init.code, init.all).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("installs @pulumi/command 1.2.1 with the dependencies; pulumi about lists its plugin", async () => {
    expect(lockedPackages()["@pulumi/command"]).toBe("1.2.1");
    writeFileSync(join(pulumi.dir, "Pulumi.s.yaml"), STACK);
    const about = await pulumi.run(["about"]);
    expect(about.code, about.all).toBe(0);
    const plugins = about.stdout.split("\n\n").find((b) => b.startsWith("Plugins")) ?? "";
    expect(plugins, about.stdout).toMatch(/language\s+nodejs/);
    expect(plugins).toMatch(/resource\s+command\s+1\.2\.1/);
  });

  it("plans the default hooks (inside the engine's sequence) without the plugin", async () => {
    writeFileSync(join(pulumi.dir, "Pulumi.s.yaml"), STACK);
    const preview = await pulumi.run(["preview"]);
    // The node does not answer: the deployment is unknown, and that is the plan's only error.
    expect(preview.all).toContain("deployment hooked is unknown");
    expect(preview.all).not.toContain("pulumi-resource-command");
    expect(preview.all).not.toMatch(/command:(remote|local):Command/);
  });

  it("fails sm121:hooks: pulumi-command without the plugin: Pulumi's error names it and its version", async () => {
    const known = join(pulumi.dir, "known_hosts");
    writeFileSync(
      join(pulumi.dir, "Pulumi.s.yaml"),
      `${STACK}  sm121:hooks: pulumi-command\n  sm121:knownHosts: ${known}\n`,
    );
    const preview = await pulumi.run(["preview"]);
    expect(preview.code).not.toBe(0);
    expect(preview.all).toContain(NO_PLUGIN);
  });
});
