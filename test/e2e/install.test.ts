/**
 * The first hour from the packed package, as a new operator has it: `npm pack`, `npm install -g`
 * into a fresh prefix, a fresh home with their key at ~/.ssh/id_ed25519 (no agent, no stack
 * secret) and a ~/.ssh/config that names the two Sparks, then in an empty directory
 * `sm121 init --nodes spark1,spark2`, `sm121 up`, `sm121 smoke` and `sm121 destroy`, and the
 * `pulumi` verbs on the same project and stack in between. Also what init refuses: a wrong
 * --user (said in init's own options) and a node whose home holds a line break (nothing written).
 */
import { spawn, spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { ed25519Pair } from "../../src/remote/keypair";
import { endSite, REPO } from "../helpers/project";
import { startSite, type SimNode, type SimSite } from "../site/site";

const AT = allocate(__filename);
const base = `/tmp/sm121-e2e-install-${process.pid}`;
const prefix = join(base, "prefix");
const home = join(base, "home");
const project = join(base, "sparks");

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** A command as the operator runs it: their PATH (the prefix's bin first), their fresh home, nothing of ours. */
function run(cmd: string, args: string[], more: Record<string, string> = {}, cwd = project): Promise<Ran> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v === undefined || /^(PULUMI_|SM121_|SSH_AUTH_SOCK$|npm_)/.test(k)) continue;
    env[k] = v;
  }
  Object.assign(env, { HOME: home, PATH: `${join(prefix, "bin")}:${process.env["PATH"] ?? ""}`, SM121_LANG: "en" });
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd, env: { ...env, ...more }, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe.sequential("from the packed package to a chat answer", () => {
  let site: SimSite;
  let n1: SimNode;
  let n2: SimNode;

  beforeAll(async () => {
    site = await startSite({ dir: join(base, "site"), nodes: ["spark1", "spark2"], ...AT.site() });
    [n1, n2] = site.nodes as [SimNode, SimNode];
    mkdirSync(join(home, ".ssh"), { recursive: true, mode: 0o700 });
    mkdirSync(project, { recursive: true });
    copyFileSync(site.clientKey, join(home, ".ssh", "id_ed25519"));
    const entry = (n: SimNode) => `Host ${n.name}\n  HostName ${n.ip}\n  Port ${n.sshPort}\n  User ${site.user}\n`;
    writeFileSync(join(home, ".ssh", "config"), `${entry(n1)}${entry(n2)}`);
    // The package as `npm pack` makes it (dist/ is built by the test run), installed as an operator installs it;
    // npm's cache is the machine's, so that the dependencies come from it.
    const pack = spawnSync("npm", ["pack", "--ignore-scripts", "--pack-destination", base], {
      cwd: REPO,
      encoding: "utf8",
    });
    if (pack.status !== 0) throw new Error(`npm pack failed: ${pack.stderr}`);
    const tarball = readdirSync(base).find((f) => f.endsWith(".tgz")) ?? "";
    const cache = join(process.env["HOME"] ?? "/root", ".npm");
    const install = await run(
      "npm",
      ["install", "-g", "--prefix", prefix, "--no-audit", "--no-fund", "--prefer-offline", join(base, tarball)],
      { npm_config_cache: cache },
      base,
    );
    if (install.code !== 0) throw new Error(`npm install -g failed:\n${install.stdout}${install.stderr}`);
  }, 600_000);

  afterAll(async () => {
    await endSite(site, base);
  });

  it("puts sm121 on PATH: its usage names the verbs that run Pulumi", async () => {
    const help = await run("sm121", ["--help"]);
    expect(help.code, help.stderr).toBe(0);
    expect(help.stdout).toMatch(/^ {2}up {2,}serve: the stack's program through Pulumi's Automation API/m);
    expect(existsSync(join(prefix, "lib", "node_modules", "sm121", "dist", "src", "cli", "main.js"))).toBe(true);
  });

  it("init reads ~/.ssh/config, makes the project, the stack, its state and passphrase, and says so", async () => {
    const init = await run("sm121", ["init", "--nodes", "spark1,spark2", "--yes"]);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    // spark1 is reached where ~/.ssh/config sends it, logged in with the default key file.
    expect(init.stdout).toContain(`spark1: [${n1.ip}]:${n1.sshPort} ssh-ed25519 SHA256:`);
    expect(init.stdout).toContain(`spark2: home ${n2.home}; GPUs 1;`);
    const pkg = join(prefix, "lib", "node_modules", "sm121");
    const projectFile = parse(readFileSync(join(project, "Pulumi.yaml"), "utf8")) as Record<string, unknown>;
    expect(projectFile).toMatchObject({ name: "sm121", main: pkg, backend: { url: `file://${home}/.sm121/state` } });
    const passphrase = join(home, ".sm121", "passphrase");
    expect(statSync(passphrase).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, ".sm121", "state")).mode & 0o777).toBe(0o700);
    expect(init.stdout).toContain(`made the passphrase of the stack's secrets: ${passphrase} (mode 0600)`);
    expect(init.stdout).toContain("without it no command can read them");
    expect(init.stdout).toContain(`created the stack sparks in file://${home}/.sm121/state (pulumi stack init)`);
    expect(init.stdout).toContain(`export PULUMI_CONFIG_PASSPHRASE_FILE=${passphrase}`);
    expect(init.stdout).toContain("next: sm121 validate, then sm121 preview and sm121 up, then sm121 smoke");
    const text = readFileSync(join(project, "Pulumi.sparks.yaml"), "utf8");
    const nodes = (parse(text) as { config: Record<string, Record<string, { ssh: unknown }>> }).config["sm121:nodes"];
    expect(nodes?.["spark1"]?.ssh).toEqual({ host: "spark1", port: n1.sshPort, user: site.user });
    expect(text).toContain(`# ${site.user}@spark1:${n1.sshPort} (spark1 is ${n1.ip} in ~/.ssh/config), its home`);
  });

  it("doctor logs in as the program does, and says with what", async () => {
    const doctor = await run("sm121", ["doctor"]);
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0);
    expect(doctor.stdout).toContain("login: ~/.ssh/id_ed25519, in this order");
    expect(doctor.stdout).toContain(`[ok  ] login ${site.user}@${n1.ip}:${n1.sshPort}: with ~/.ssh/id_ed25519`);
  });

  it("sm121 up serves through the Automation API; smoke answers; pulumi's verbs see the same stack", async () => {
    const up = await run("sm121", ["up"]);
    expect(up.code, up.stdout + up.stderr).toBe(0);
    // Pulumi's own output, streamed.
    expect(up.stdout).toMatch(/^Updating \(sparks\)/m);
    expect(up.stdout).toContain("qwen3-8b-solo: spark1: ready in");
    expect(up.stdout).toMatch(/^ {4}\+ 5 created$/m);
    const smoke = await run("sm121", ["smoke"]);
    expect(smoke.code, smoke.stdout + smoke.stderr).toBe(0);
    expect(smoke.stdout).toMatch(/^ {2}answer: This is a simulated answer from vllm serving qwen3-8b on spark1/m);
    // The only deployment needs no name: logs and bench take it, as smoke does.
    const logs = await run("sm121", ["logs", "--lines", "3"]);
    expect(logs.code, logs.stdout + logs.stderr).toBe(0);
    expect(logs.stdout).toMatch(/^spark1 \| /m);
    const bench = await run("sm121", ["bench", "--requests", "2", "--concurrency", "1", "--max-tokens", "4"]);
    expect(bench.code, bench.stdout + bench.stderr).toBe(0);
    expect(bench.stdout).toMatch(/^bench qwen3-8b on http:\/\/\S+:8000: 2 requests/m);
    const passphrase = { PULUMI_CONFIG_PASSPHRASE_FILE: join(home, ".sm121", "passphrase") };
    const preview = await run("pulumi", ["preview", "--non-interactive"], passphrase);
    expect(preview.code, preview.stdout + preview.stderr).toBe(0);
    expect(preview.stdout).toMatch(/^ {4}5 unchanged$/m);
  }, 600_000);

  it("sm121 destroy stops it", async () => {
    const destroy = await run("sm121", ["destroy"]);
    expect(destroy.code, destroy.stdout + destroy.stderr).toBe(0);
    expect(destroy.stdout).toMatch(/^ {4}- 5 deleted$/m);
    const status = await run("sm121", ["status"]);
    expect(status.stdout).toContain("nothing is deployed on stack sparks");
  }, 300_000);

  it("a login init cannot make names init's own --user", async () => {
    const dir = join(base, "wrong-user");
    mkdirSync(dir);
    const init = await run("sm121", ["init", "--nodes", "spark1", "--user", "nobody-here", "--yes"], {}, dir);
    expect(init.code).not.toBe(0);
    expect(init.stderr).toContain(`the login as nobody-here@${n1.ip}:${n1.sshPort} was refused`);
    expect(init.stderr).toContain("check --user (this run: nobody-here; without it, User in ~/.ssh/config");
    expect(existsSync(join(dir, "Pulumi.sparks.yaml"))).toBe(false);
  });

  it("a node whose home holds a line break: init refuses it, naming the node, and writes nothing", async () => {
    const dir = join(base, "hostile");
    mkdirSync(dir);
    // A key whose login on spark2 runs with a home that would add lines to the stack file.
    const key = ed25519Pair();
    const keyFile = join(base, "hostile_ed25519");
    writeFileSync(keyFile, key.private, { mode: 0o600 });
    const hostile = "export HOME=$(printf '/tmp/x\\nsm121:hostKeys: accept-new'); eval $SSH_ORIGINAL_COMMAND";
    const line = `command="${hostile}" ${key.public.split(" ").slice(0, 2).join(" ")}\n`;
    writeFileSync(join(n2.home, ".ssh", "authorized_keys"), line, { flag: "a" });
    const init = await run("sm121", ["init", "--nodes", "spark2", "--yes"], { SM121_SSH_KEY: keyFile }, dir);
    expect(init.code).toBe(1);
    expect(init.stderr).toContain(
      'spark2 printed "/tmp/x\\nsm121:hostKeys: accept-new" for $HOME, which is not an absolute path',
    );
    expect(init.stderr).toContain("nothing written");
    expect(existsSync(join(dir, "Pulumi.sparks.yaml"))).toBe(false);
  });
});
