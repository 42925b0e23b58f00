/**
 * The default install involves no command plugin: `pulumi about` in a project whose node_modules
 * holds exactly the packages of package-lock.json (what `npm ci` installs) lists none, and
 * `sm121:hooks: pulumi-command` without the package fails the preview, before any node is looked
 * at, naming the config key and the command that installs it. (With the package, the mode's
 * registrations are tested in test/recipe-component.test.ts.)
 */
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { t } from "../../src/text/messages";
import { REPO } from "../helpers/project";
import { pulumiEnv, type PulumiEnv } from "../helpers/pulumi";

const RECIPE =
  'engine = "vllm"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n[hooks]\nbefore_serve = ["true"]\n';
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

/** The top-level packages package-lock.json installs (`node_modules/<name>`, not nested ones). */
function lockedPackages(): string[] {
  const lock = JSON.parse(readFileSync(join(REPO, "package-lock.json"), "utf8")) as {
    packages: Record<string, unknown>;
  };
  return Object.keys(lock.packages)
    .filter((k) => /^node_modules\/(@[^/]+\/)?[^/@]+$/.test(k))
    .map((k) => k.slice("node_modules/".length));
}

describe.sequential("plugins of the default install", () => {
  let dir: string;
  let pulumi: PulumiEnv;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sm121-plugins-"));
    const project = join(dir, "project");
    mkdirSync(join(project, "recipes"), { recursive: true });
    for (const f of ["Pulumi.yaml", "package.json", "package-lock.json"]) cpSync(join(REPO, f), join(project, f));
    // A build of its own: a linked one would find this checkout's node_modules.
    cpSync(join(REPO, "dist"), join(project, "dist"), { recursive: true });
    for (const name of lockedPackages()) {
      const to = join(project, "node_modules", name);
      if (!existsSync(join(REPO, "node_modules", name))) continue;
      mkdirSync(dirname(to), { recursive: true });
      symlinkSync(join(REPO, "node_modules", name), to);
    }
    writeFileSync(join(project, "recipes", "hooked.toml"), RECIPE);
    pulumi = pulumiEnv(project, join(dir, "pulumi"));
    const init = await pulumi.run(["stack", "init", "s"]);
    expect(init.code, init.all).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("lists no command plugin in pulumi about", async () => {
    expect(lockedPackages()).not.toContain("@pulumi/command");
    writeFileSync(join(pulumi.dir, "Pulumi.s.yaml"), STACK);
    const about = await pulumi.run(["about"]);
    expect(about.code, about.all).toBe(0);
    const plugins = about.stdout.split("\n\n").find((b) => b.startsWith("Plugins")) ?? "";
    expect(plugins, about.stdout).toMatch(/language\s+nodejs/);
    expect(plugins).not.toMatch(/command/);
  });

  it("fails a preview in sm121:hooks: pulumi-command without the package, saying how to install it", async () => {
    writeFileSync(join(pulumi.dir, "Pulumi.s.yaml"), `${STACK}  sm121:hooks: pulumi-command\n`);
    const preview = await pulumi.run(["preview"]);
    expect(preview.code).not.toBe(0);
    const missing = t("serve.commandMissing");
    expect(preview.all.replace(/\s+/g, " ")).toContain(missing);
    expect(missing).toContain("sm121:hooks: pulumi-command");
    expect(missing).toContain("`npm run hooks:install`");
    // Refused before the plan-time look: no node was dialled.
    expect(preview.all).not.toMatch(/192\.0\.2\.1:22|unknown:|timed out/);
  });
});
