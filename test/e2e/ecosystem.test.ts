/**
 * sm121 as a citizen of the Pulumi ecosystem, through the real Pulumi CLI: the language host's
 * `pulumi install`, `pulumi about`, Ctrl-C and a vanished engine; the site read from Pulumi's
 * resolved configuration (project-level config, --config-file) by the program and by the CLI; the
 * CLI following `pulumi stack select` and connecting with the stack's own key.
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { sm121 } from "../cli-helpers";
import { e2eProject, nodesYaml, REPO, type E2E } from "../helpers/project";
import { pulumiEnv, writeFiles } from "../helpers/pulumi";
import { testDir } from "../helpers/tmp";
import { setEngineBehaviour, type SimNode } from "../site/site";
import { nodeProcesses, waitFor } from "../site/faults";
import { smallVllm } from "../helpers/spec";

const AT = allocate(__filename);

const SMALL = smallVllm(60);

/** The processes whose command line mentions `text` (the program's `--pwd <dir>`, a host's engine address). */
function processes(text: string): string[] {
  return spawnSync("ps", ["-eo", "pid=,ppid=,args="], { encoding: "utf8" })
    .stdout.split("\n")
    .filter((l) => l.includes(text) && !l.includes("ps -eo"));
}

async function until(what: () => boolean, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 250)))
    if (what()) return true;
  return what();
}

describe("the Node.js language host through the real CLI", () => {
  const dir = mkdtempSync(join(tmpdir(), "sm121-langhost-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("pulumi about lists the program's dependencies", async () => {
    mkdirSync(join(dir, "about"));
    for (const f of ["Pulumi.yaml", "package.json", "package-lock.json"]) cpSync(join(REPO, f), join(dir, "about", f));
    const p = pulumiEnv(join(dir, "about"), join(dir, "about-pulumi"));
    expect((await p.run(["stack", "init", "about"])).code).toBe(0);
    const about = await p.run(["about"]);
    expect(about.code, about.all).toBe(0);
    expect(about.all).not.toContain("Failed to get information about the Pulumi program's dependencies");
    expect(about.all).toMatch(/@pulumi\/pulumi\s+3\.270\.0/);
    // The package manager's version, as `npm --version` says it (read from npm's package.json).
    const npm = spawnSync("npm", ["--version"], { encoding: "utf8" }).stdout.trim();
    // (The CLI prints the host's metadata in map order: each on its own.)
    expect(about.all).toContain("packagemanager='npm'");
    expect(about.all).toContain(`packagemanagerVersion='${npm}'`);
    expect(about.all).toMatch(/packagemanager='npm'/);
  });

  it("pulumi install runs the package manager's install, its output streamed", async () => {
    const project = join(dir, "install");
    writeFiles(project, {
      "Pulumi.yaml": "name: tiny\nruntime:\n  name: nodejs\n  options:\n    typescript: false\n",
      // One local dependency (no registry needed), and an install script of the project's own.
      "package.json": `${JSON.stringify({
        name: "tiny",
        version: "1.0.0",
        private: true,
        dependencies: { dep: "file:./dep" },
        scripts: { postinstall: "node -e \"require('fs').writeFileSync('installed','yes')\"" },
      })}\n`,
      "dep/package.json": '{"name":"dep","version":"0.1.0"}\n',
    });
    const p = pulumiEnv(project, join(dir, "install-pulumi"));
    const install = await p.run(["install", "--no-plugins"]);
    expect(install.code, install.all).toBe(0);
    expect(install.all).toContain("Installing dependencies...");
    expect(install.all).toContain("Finished installing dependencies");
    expect(readFileSync(join(project, "installed"), "utf8")).toBe("yes");
    expect(existsSync(join(project, "node_modules", "dep", "package.json"))).toBe(true);
  });
});

describe.sequential("sm121 in the Pulumi ecosystem (each test builds on the stack files the one before left)", () => {
  let e: E2E;
  let node: SimNode;
  const projectYaml = () => readFileSync(join(REPO, "Pulumi.yaml"), "utf8");
  /** The operator's own shell: Pulumi's environment, no SM121_STACK, no key besides the stack's. */
  const operator = (extra: Record<string, string> = {}) => {
    const home = testDir("sm121-home-");
    return { ...e.pulumi.env, HOME: home, SM121_STACK: "", SM121_SSH_KEY: "", ...extra };
  };
  const cli = (args: string[], env: Record<string, string>) =>
    sm121({ dir: e.dir, stack: "", site: { clientKey: "" } }, args, { env });

  beforeAll(async () => {
    e = await e2eProject({
      name: "ecosystem",
      nodes: ["spark1"],
      ...AT.site(),
      config: () => "",
      recipes: { "small.toml": SMALL },
    });
    node = e.site.nodes[0] as SimNode;
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("reads deployments from Pulumi.yaml's project config, in the program and in the CLI", async () => {
    writeFileSync(
      join(e.dir, "Pulumi.yaml"),
      `${projectYaml()}config:\n  sm121:deployments:\n    value:\n` +
        "      - { name: from-project, recipe: small, nodes: [spark1] }\n",
    );
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("::sm121:index:Site$sm121:index:Deployment::from-project]");
    const validate = await cli(["validate"], operator({ SM121_STACK: e.stack }));
    expect(validate.stdout + validate.stderr).toMatch(/deployments? \(from-project\)/);
  });

  it("passes runtime.options.nodeargs to node as shell words", async () => {
    const hook = join(e.dir, "a dir", "hook.js");
    writeFiles(e.dir, {
      "a dir/hook.js": "require('fs').writeFileSync(__dirname + '/ran', process.execArgv.join('|'));\n",
    });
    writeFileSync(
      join(e.dir, "Pulumi.yaml"),
      projectYaml().replace(
        "    typescript: false\n",
        `    typescript: false\n    nodeargs: --require "${hook}" --max-old-space-size=1024\n`,
      ),
    );
    const preview = await e.preview();
    writeFileSync(join(e.dir, "Pulumi.yaml"), projectYaml());
    expect(preview.code, preview.all).toBe(0);
    expect(readFileSync(join(e.dir, "a dir", "ran"), "utf8")).toBe(`--require|${hook}|--max-old-space-size=1024`);
  });

  it("places a bad project-level value in Pulumi.yaml, and one from --config-file in Pulumi's config", async () => {
    // A key the stack file does not set (the stack's own value would win over the project's).
    writeFileSync(join(e.dir, "Pulumi.yaml"), `${projectYaml()}config:\n  sm121:lockWaitS: -5\n`);
    const line = projectYaml().split("\n").length + 1;
    const bad = await e.preview();
    expect(bad.code).not.toBe(0);
    writeFileSync(join(e.dir, "Pulumi.yaml"), projectYaml());
    expect(bad.all).toContain(`Pulumi.yaml:${line}:3: sm121:lockWaitS: `);
    const file = join(e.dir, "elsewhere.yaml");
    writeFileSync(
      file,
      readFileSync(join(e.dir, `Pulumi.${e.stack}.yaml`), "utf8").replace(
        "config:\n",
        "config:\n  sm121:rollback: sideways\n",
      ),
    );
    const fromFile = await e.pulumi.run(["preview", "--config-file", file]);
    expect(fromFile.code).not.toBe(0);
    expect(fromFile.all).toContain(
      "Pulumi's configuration of the stack (an ESC environment or --config-file): sm121:rollback: ",
    );
  });

  it("reads the whole site from --config-file", async () => {
    const file = join(e.dir, "site-elsewhere.yaml");
    // The stack's encrypted login key and its salt come along: a login the look cannot make fails the preview.
    const stackText = readFileSync(join(e.dir, `Pulumi.${e.stack}.yaml`), "utf8");
    const salt = /^encryptionsalt: .*\n/m.exec(stackText)?.[0] ?? "";
    const key = /\n( {2}sm121:sshPrivateKey:\n(?: {4}.*\n)+)/.exec(stackText)?.[1] ?? "";
    const deployments = ["  sm121:deployments:", "    - { name: from-config-file, recipe: small, nodes: [spark1] }"];
    const site = ["config:", `  sm121:knownHosts: ${e.site.knownHosts}`, nodesYaml(e.site), ...deployments, ""];
    writeFileSync(file, salt + site.join("\n") + key);
    const preview = await e.pulumi.run(["preview", "--diff", "--config-file", file]);
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("::sm121:index:Site$sm121:index:Deployment::from-config-file]");
  });

  it("the CLI follows pulumi stack select; $SM121_STACK still wins", async () => {
    writeFileSync(
      join(e.dir, "Pulumi.other.yaml"),
      [
        "config:",
        `  sm121:knownHosts: ${e.site.knownHosts}`,
        nodesYaml(e.site),
        "  sm121:deployments:",
        "    - { name: on-other, recipe: small, nodes: [spark1] }",
        "",
      ].join("\n"),
    );
    expect((await e.pulumi.run(["stack", "init", "other"])).code).toBe(0);
    const selected = await cli(["validate"], operator());
    expect(selected.stdout, selected.stderr).toMatch(/deployments? \(on-other\)/);
    expect((await e.pulumi.run(["stack", "select", e.stack])).code).toBe(0);
    const back = await cli(["validate"], operator());
    expect(back.stdout, back.stderr).toContain("0 deployments");
    const pinned = await cli(["validate"], operator({ SM121_STACK: "other" }));
    expect(pinned.stdout, pinned.stderr).toMatch(/deployments? \(on-other\)/);
  });

  it("the CLI connects with the stack's sm121:sshPrivateKey secret, with no other key anywhere", async () => {
    const env = operator({ SM121_STACK: e.stack });
    const doctor = await cli(["doctor", "--node", "spark1", "--json"], env);
    const report = JSON.parse(doctor.stdout) as { nodes: Array<{ node: string; connect: unknown }> };
    expect(report.nodes.map((n) => [n.node, n.connect])).toEqual([["spark1", null]]);
    // Without the stack's key (a stack file read alone: no Pulumi CLI knows this stack) it cannot log in.
    const bare = await cli(["doctor", "--node", "spark1", "--json"], {
      ...env,
      PULUMI_BACKEND_URL: `file://${testDir("sm121-empty-")}`,
    });
    expect(
      (JSON.parse(bare.stdout) as { nodes: Array<{ connect: { kind: string } | null }> }).nodes[0]?.connect?.kind,
    ).toBe("auth");
    // The key was read into memory: no file under the operator's HOME holds it.
    expect(spawnSync("grep", ["-rl", "PRIVATE KEY", env.HOME], { encoding: "utf8" }).stdout).toBe("");
  });

  it("a project without recipes/ is told what to create, with no stack trace", async () => {
    renameSync(join(e.dir, "recipes"), join(e.dir, "recipes-away"));
    const preview = await e.preview();
    renameSync(join(e.dir, "recipes-away"), join(e.dir, "recipes"));
    expect(preview.code).not.toBe(0);
    expect(preview.all).toContain(
      `sm121:recipesDir: recipes/ is not a directory of ${e.dir}; ` +
        `create recipes/ with a recipe in it (recipes/<name>.toml, see docs/recipes.md)`,
    );
    expect(preview.all).not.toMatch(/ENOENT| {4}at /);
  });

  it("Ctrl-C during pulumi up ends the program and the language host; the next up converges", async () => {
    writeFileSync(
      join(e.dir, `Pulumi.${e.stack}.yaml`),
      readFileSync(join(e.dir, `Pulumi.${e.stack}.yaml`), "utf8").replace(
        "config:\n",
        "config:\n  sm121:deployments:\n    - { name: slow, recipe: small, nodes: [spark1] }\n",
      ),
    );
    setEngineBehaviour(node, { startDelayS: 15 });
    // Ctrl-C once the engine is loading: the up is in the middle of its serve.
    const loading = waitFor("the slow engine", () => nodeProcesses(node, /fake-engine/).length > 0);
    const up = await e.pulumi.run(["up", "--yes", "--skip-preview"], { timeoutMs: 120_000, interruptWhen: loading });
    expect(up.code).not.toBe(0);
    expect(up.all).not.toContain("exited prematurely");
    expect(
      await until(() => processes(`--pwd ${e.dir}`).length === 0, 15_000),
      processes(`--pwd ${e.dir}`).join("\n"),
    ).toBe(true);
    setEngineBehaviour(node, null);
    const again = await e.up();
    expect(again.code, again.all).toBe(0);
  });

  it("a language host whose engine vanished (kill -9 of pulumi) ends itself and its program", async () => {
    setEngineBehaviour(node, { startDelayS: 30 });
    const child = spawn("pulumi", ["up", "--yes", "--skip-preview", "--non-interactive", "--color", "never"], {
      cwd: e.dir,
      env: { ...process.env, ...e.pulumi.env, SM121_RESTART: "1" },
      stdio: "ignore",
    });
    const pid = child.pid ?? 0;
    const hosts = () => processes("pulumi-language-nodejs").filter((l) => l.trim().split(/\s+/)[1] === String(pid));
    expect(await until(() => hosts().length > 0 && processes(`--pwd ${e.dir}`).length > 0, 30_000)).toBe(true);
    const hostPid = hosts()[0]?.trim().split(/\s+/)[0] ?? "";
    child.kill("SIGKILL");
    // The health check asks every 10 s; the program gets SIGINT, then SIGKILL 5 s later.
    const gone = await until(
      () =>
        !processes("pulumi-language-nodejs").some((l) => l.trim().split(/\s+/)[0] === hostPid) &&
        processes(`--pwd ${e.dir}`).length === 0,
      40_000,
    );
    expect(gone, processes("pulumi-language-nodejs").join("\n")).toBe(true);
    setEngineBehaviour(node, null);
  });
});
