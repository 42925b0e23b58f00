/**
 * The first day on two Sparks, as a new operator runs it, on the simulated site: an empty project
 * (no stack file, no state directory, the host keys unknown, the key in ssh-agent), then
 * `sm121 init`, `sm121 validate`, `pulumi preview`, `pulumi up` and `sm121 smoke`, and nothing
 * else, to a chat answer. Then `status` after `pulumi destroy` says that nothing is deployed.
 */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { allocate } from "../site/alloc";
import { endSite, REPO } from "../helpers/project";
import { PASSPHRASE, pulumiEnv, type PulumiEnv, type PulumiRun } from "../helpers/pulumi";
import { sshOk } from "../site/exec";
import { devicesDir, setFabric, sparkFabric } from "../site/fabric";
import { SITE_IMAGES } from "../site/images";
import { startSite, type SimNode, type SimSite } from "../site/site";

const AT = allocate(__filename);

const base = `/tmp/sm121-e2e-firstday-${process.pid}`;
const dir = join(base, "project");
const state = join(base, "state");
const knownHosts = join(base, "known_hosts");
const agentSock = join(base, "agent.sock");

describe.sequential("the first day: sm121 init to a chat answer", () => {
  let site: SimSite;
  let agent: ChildProcess | undefined;
  let pulumi: PulumiEnv;
  let env: Record<string, string>;
  /** The compiled sm121 as the operator runs it: in the project, with their agent and no key file. */
  const run = (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(REPO, "bin", "sm121"), ...args], {
        cwd: dir,
        env: { ...process.env, ...env, SM121_LANG: "en" },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
      child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
      child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
      child.on("error", reject);
      child.on("close", (code) => {
        clearTimeout(timer);
        resolve({ code, stdout, stderr });
      });
    });
  const pulumiRun = (args: string[]): Promise<PulumiRun> =>
    pulumi.run([...args, "--stack", "sim"], { env, timeoutMs: 300_000 });

  beforeAll(async () => {
    rmSync(base, { recursive: true, force: true });
    site = await startSite({ dir: join(base, "site"), nodes: ["spark1", "spark2"], ...AT.site() });
    // spark2 is cabled as a Spark: its ConnectX-7 interface holds its address; spark1 shows no RDMA interface.
    setFabric(site.nodes[1] as SimNode, sparkFabric((site.nodes[1] as SimNode).ip));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "Pulumi.yaml"), readFileSync(join(REPO, "Pulumi.yaml")));
    writeFileSync(join(dir, "package.json"), '{"name":"sm121-first-day","private":true,"main":"dist/src/index.js"}\n');
    for (const link of ["dist", "node_modules"]) symlinkSync(join(REPO, link), join(dir, link));
    // The operator's key in ssh-agent, as the README's set-up has it; the state directory does not exist yet.
    agent = spawn("ssh-agent", ["-D", "-a", agentSock], { stdio: "ignore" });
    for (let i = 0; i < 100 && !existsSync(agentSock); i++) await new Promise((r) => setTimeout(r, 50));
    const add = spawnSync("ssh-add", [site.clientKey], {
      env: { ...process.env, SSH_AUTH_SOCK: agentSock },
      encoding: "utf8",
    });
    if (add.status !== 0) throw new Error(`ssh-add failed: ${add.stderr}`);
    pulumi = pulumiEnv(dir, join(base, "pulumi"));
    env = {
      ...pulumi.env,
      PULUMI_BACKEND_URL: `file://${state}`,
      PULUMI_CONFIG_PASSPHRASE: PASSPHRASE,
      SSH_AUTH_SOCK: agentSock,
      SM121_SSH_KEY: "",
      SM121_STACK: "",
    };
  }, 120_000);

  afterAll(async () => {
    if (agent?.pid !== undefined) process.kill(agent.pid);
    await endSite(site, base);
  });

  it("init shows the host keys, looks at the nodes and writes a stack that fits them", async () => {
    const [n1, n2] = site.nodes as [SimNode, SimNode];
    const init = await run([
      "init",
      "--nodes",
      `${n1.ip},${n2.ip}`,
      "--port",
      String(n1.sshPort),
      "--user",
      site.user,
      "--yes",
      "--stack",
      "sim",
      "--known-hosts",
      knownHosts,
    ]);
    expect(init.code, init.stdout + init.stderr).toBe(0);
    // Each node's fingerprint is shown, then recorded: the file holds the keys the site's own list has.
    expect(init.stdout).toMatch(
      new RegExp(`spark1: \\[${n1.ip.replace(/\./g, "\\.")}\\]:${n1.sshPort} ssh-ed25519 SHA256:\\S+ \\(new\\)`),
    );
    expect(init.stdout).toContain(`recorded 2 host keys in ${knownHosts}`);
    expect(init.stdout, init.stdout + init.stderr).toContain(
      `created the stack sim in file://${state} (pulumi stack init)`,
    );
    const keys = (f: string) =>
      readFileSync(f, "utf8")
        .trim()
        .split("\n")
        .map((l) => l.split(" ").slice(1).join(" "))
        .sort();
    expect(keys(knownHosts)).toEqual(keys(site.knownHosts));
    expect(existsSync(state)).toBe(true);
    // Where the state is, said once, with the way to a team's backend.
    expect(init.stdout).toContain(`made the state directory of this project's stacks: file://${state} (`);
    expect(init.stdout).toContain("for a team, move it to a shared backend: docs/team.md");
    const text = readFileSync(join(dir, "Pulumi.sim.yaml"), "utf8");
    const cfg = (parse(text) as { config: Record<string, unknown> }).config;
    const nodes = cfg["sm121:nodes"] as Record<
      string,
      { ip: string; fabric?: unknown; gpus: number; env: { HF_HOME: string } }
    >;
    expect(nodes["spark1"]).toMatchObject({ ip: n1.ip, gpus: 1, env: { HF_HOME: `${n1.home}/.cache/huggingface` } });
    // The simulated nodes have no RDMA interface with an address: the address ssh reached, and no fabric block.
    expect(nodes["spark1"]?.fabric).toBeUndefined();
    expect(text).toContain(
      `# ${n1.ip} on lo: the address this SSH connection reached, as no RDMA interface has an IPv4 address`,
    );
    // spark2's ConnectX-7 interface, found through its RDMA devices; its ports are for the plan-time look.
    expect(nodes["spark2"]).toMatchObject({ ip: n2.ip, fabric: { interface: "enp1s0f1np1", rdma: "auto" } });
    expect(init.stdout).toContain(
      `spark2: home ${n2.home}; GPUs 1; memory 121.7 GiB; cluster interface enp1s0f1np1 ${n2.ip}; ` +
        `docker images ${Object.keys(SITE_IMAGES).length}`,
    );
    expect(cfg["sm121:deployments"]).toEqual([{ recipe: "qwen3-8b-solo", nodes: ["spark1"] }]);
    expect(cfg["sm121:gateway"]).toBeUndefined();
    // Each fact with its comment; the pair commented out.
    expect(text).toContain("# GPU: 1 x NVIDIA GB10 (nvidia-smi -L)");
    expect(text).toContain(`# the HF cache ${n1.home}/.cache/huggingface: does not exist yet`);
    expect(text).toContain("# - { recipe: qwen3-32b-vllm-tp2, nodes: [spark1, spark2] }");
    // The two recipes came from the shipped ones.
    expect(readFileSync(join(dir, "recipes", "qwen3-8b-solo.toml"), "utf8")).toBe(
      readFileSync(join(REPO, "recipes", "qwen3-8b-solo.toml"), "utf8"),
    );

    const again = await run([
      "init",
      "--nodes",
      n1.ip,
      "--port",
      String(n1.sshPort),
      "--yes",
      "--stack",
      "sim",
      "--known-hosts",
      knownHosts,
    ]);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(
      "Pulumi.sim.yaml exists: sm121 init writes a new stack file and never overwrites one",
    );
    expect(readFileSync(join(dir, "Pulumi.sim.yaml"), "utf8")).toBe(text);
  });

  it("validate, preview, up and smoke: a chat answer", async () => {
    const [n1] = site.nodes as [SimNode, SimNode];
    const validate = await run(["validate"]);
    expect(validate.code, validate.stderr).toBe(0);
    expect(validate.stdout).toContain("1 deployment (qwen3-8b-solo)");
    const preview = await pulumiRun(["preview"]);
    expect(preview.code, preview.all).toBe(0);
    const up = await pulumiRun(["up", "--yes"]);
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain("1800 s + 300 s grace");
    // The HF cache the engine fills was made by the up.
    expect(await sshOk(site, n1, "test -d ~/.cache/huggingface && echo made")).toBe("made\n");
    const smoke = await run(["smoke"]);
    expect(smoke.code, smoke.stdout + smoke.stderr).toBe(0);
    expect(smoke.stdout).toMatch(
      new RegExp(
        `^qwen3-8b-solo on spark1 \\(http://${n1.ip.replace(/\./g, "\\.")}:8000/v1/chat/completions\\): HTTP 200`,
        "m",
      ),
    );
    expect(smoke.stdout).toMatch(/^ {2}answer: \S/m);
  });

  it("status after destroy: nothing deployed, exit 0, no figure from before", async () => {
    const destroy = await pulumiRun(["destroy", "--yes"]);
    expect(destroy.code, destroy.all).toBe(0);
    const status = await run(["status"]);
    expect(status.code, status.stdout + status.stderr).toBe(0);
    expect(status.stdout).toContain("nothing is deployed on stack sim");
    expect(status.stdout).not.toMatch(/saved at up|tokens/);
  });

  it("what an engine would refuse at start fails a plain preview, before anything is touched", async () => {
    const [n1, n2] = site.nodes as [SimNode, SimNode];
    const stackFile = join(dir, "Pulumi.sim.yaml");
    const text = readFileSync(stackFile, "utf8");
    // vLLM reads --config while it parses (here through the HF cache mount); an offline engine fills no HF cache.
    writeFileSync(
      join(dir, "recipes", "with-config.toml"),
      'model = "Qwen/Qwen3-8B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n' +
        'args = ["--config", "/root/.cache/huggingface/serve.yaml"]\n',
    );
    writeFileSync(
      join(dir, "recipes", "offline.toml"),
      'model = "sm121-test/tiny-qwen3"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n' +
        '[env]\nHF_HUB_OFFLINE = "1"\n',
    );
    // spark2's RDMA devices are where the simulated site keeps them (a Spark's are in /dev/infiniband).
    const devices = text.replace(
      "fabric: { interface: enp1s0f1np1, rdma: auto }",
      `fabric: { interface: enp1s0f1np1, rdma: auto, devices: ${devicesDir(n2)} }`,
    );
    writeFileSync(
      stackFile,
      devices.replace(
        "    - { recipe: qwen3-8b-solo, nodes: [ spark1 ] }",
        "    - { recipe: with-config, nodes: [spark1] }\n    - { recipe: offline, nodes: [spark2] }",
      ),
    );
    try {
      const refused = await pulumiRun(["preview"]);
      expect(refused.code).not.toBe(0);
      expect(refused.all).toContain("sm121: the engines would refuse to start (nothing was stopped):");
      expect(refused.all).toContain(
        `with-config: spark1: missing ${n1.home}/.cache/huggingface/serve.yaml (--config ` +
          `/root/.cache/huggingface/serve.yaml in args of recipes/with-config.toml: ` +
          `vLLM opens it while it parses its arguments and stops with FileNotFoundError without it ` +
          `(/root/.cache/huggingface/serve.yaml in the container); put the file there, ` +
          `or change the path in recipes/with-config.toml)`,
      );
      expect(refused.all).toContain(
        `offline: spark2: missing ${n2.home}/.cache/huggingface (the HF cache (HF_HOME) of spark2, ` +
          `which nothing in this up fills`,
      );
      // With the file there and the cache made, the model is still not in it: the plan and doctor say so, with the fix.
      await sshOk(site, n1, "printf 'max-model-len: 16384\\n' > ~/.cache/huggingface/serve.yaml");
      await sshOk(site, n2, "mkdir -p ~/.cache/huggingface");
      const cache = `${n2.home}/.cache/huggingface`;
      const fix = `HF_HOME=${cache} hf download sm121-test/tiny-qwen3 --revision main`;
      const missing =
        "offline: spark2: sm121-test/tiny-qwen3@main is not complete in the HF cache " +
        `${cache}/hub/models--sm121-test--tiny-qwen3: no refs/main: the revision was never downloaded here ` +
        "(the checkpoint in the node's HF cache, which nothing in this up fills";
      const noModel = await pulumiRun(["preview"]);
      expect(noModel.code).not.toBe(0);
      expect(noModel.all).toContain(missing);
      const fixWords = `fix: on spark2 run \`${fix}\`, or set sm121:modelCache: keep and the up brings it`;
      expect(noModel.all).toContain(fixWords);
      const doctor = await run(["doctor", "--json"]);
      type Report = { nodes: Array<{ node: string; checks: Array<{ check: string; detail: string | null }> }> };
      const report = JSON.parse(doctor.stdout) as Report;
      const details =
        report.nodes
          .find((n) => n.node === "spark2")
          ?.checks.map((c) => c.detail ?? "")
          .join("\n") ?? "";
      expect(details).toContain(missing.slice("offline: spark2: ".length));
      // The fix the message names, run on the node, is all it takes.
      await sshOk(site, n2, fix);
      const passes = await pulumiRun(["preview"]);
      expect(passes.code, passes.all).toBe(0);
    } finally {
      writeFileSync(stackFile, text);
    }
  }, 300_000);

  it("the memory fit reads the model from the hub through a node before the first up; unknown in words", async () => {
    const stackFile = join(dir, "Pulumi.sim.yaml");
    const text = readFileSync(stackFile, "utf8");
    // Neither has [memory]; the site's hub has the first model (test/site/hf-hub), not the second.
    const recipe = (model: string) => `model = "${model}"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\n`;
    writeFileSync(join(dir, "recipes", "tiny.toml"), recipe("sm121-test/tiny-qwen3"));
    writeFileSync(join(dir, "recipes", "nowhere.toml"), recipe("sm121-test/not-on-the-hub"));
    // spark2's RDMA devices are where the simulated site keeps them (a Spark's are in /dev/infiniband).
    const n2 = site.nodes[1] as SimNode;
    writeFileSync(
      stackFile,
      text
        .replace(
          "fabric: { interface: enp1s0f1np1, rdma: auto }",
          `fabric: { interface: enp1s0f1np1, rdma: auto, devices: ${devicesDir(n2)} }`,
        )
        .replace(
          "    - { recipe: qwen3-8b-solo, nodes: [ spark1 ] }",
          "    - { recipe: tiny, nodes: [ spark1 ] }\n    - { recipe: nowhere, nodes: [ spark2 ] }",
        ),
    );
    try {
      const preview = await pulumiRun(["preview"]);
      expect(preview.code, preview.all).toBe(0);
      expect(preview.all).toContain(
        "weights: the safetensors index of sm121-test/tiny-qwen3 on the hub, read through spark1;",
      );
      expect(preview.all).toContain("shape from config.json of sm121-test/tiny-qwen3 on the hub, read through spark1");
      expect(preview.all).toContain(
        "memory fit of nowhere is unknown: the weights' size is unknown: the checkpoint is in no node's HF cache, " +
          "the hub gave no size through a node, and recipes/nowhere.toml has no [memory] weights_gb. An up starts it " +
          "without knowing whether it fits in memory",
      );
      // Not a table of question marks.
      expect(preview.all).not.toMatch(/memory fit of nowhere: /);
      const doctor = await run(["doctor"]);
      expect(doctor.stdout).toContain("memory fit of nowhere is unknown:");
    } finally {
      writeFileSync(stackFile, text);
    }
  });

  it("doctor is not ready where the plan refuses: a fabric interface the node does not have", async () => {
    const stackFile = join(dir, "Pulumi.sim.yaml");
    const text = readFileSync(stackFile, "utf8");
    writeFileSync(
      stackFile,
      text
        .replace("fabric: { interface: enp1s0f1np1, rdma: auto }", "fabric: { interface: enp9s9, rdma: auto }")
        .replace(
          "    - { recipe: qwen3-8b-solo, nodes: [ spark1 ] }",
          "    - { recipe: qwen3-8b-solo, nodes: [ spark2 ] }",
        ),
    );
    try {
      const refusal = "spark2: the fabric interface enp9s9 is not on the node";
      const preview = await pulumiRun(["preview"]);
      expect(preview.code).not.toBe(0);
      expect(preview.all).toContain(refusal);
      const doctor = await run(["doctor"]);
      expect(doctor.code, doctor.stdout + doctor.stderr).toBe(1);
      expect(doctor.stdout).toContain("the plan would refuse (pulumi preview and sm121 preview say the same):");
      expect(doctor.stdout).toContain(refusal);
      expect(doctor.stdout).not.toContain("doctor: every node is ready");
    } finally {
      writeFileSync(stackFile, text);
    }
  });

  it("doctor reads an unknown image's engine version on the node, and says where to write it", async () => {
    const stackFile = join(dir, "Pulumi.sim.yaml");
    const text = readFileSync(stackFile, "utf8");
    writeFileSync(
      join(dir, "recipes", "latest.toml"),
      'model = "Qwen/Qwen3-8B"\nimage = "vllm/vllm-openai:latest"\nport = 8000\n',
    );
    writeFileSync(
      stackFile,
      text.replace("    - { recipe: qwen3-8b-solo, nodes: [ spark1 ] }", "    - { recipe: latest, nodes: [spark1] }"),
    );
    try {
      const validate = await run(["validate"]);
      expect(validate.stderr).toContain(
        "warning: recipes/latest.toml: the vLLM version of image vllm/vllm-openai:latest is not known",
      );
      const doctor = await run(["doctor", "--json"]);
      const report = JSON.parse(doctor.stdout) as {
        nodes: Array<{
          node: string;
          checks: Array<{ check: string; ok: boolean; severity: string; detail: string | null }>;
        }>;
      };
      const check = report.nodes.find((n) => n.node === "spark1")?.checks.find((c) => c.check === "engine-version");
      // The simulated image carries no vLLM package: the version cannot be read there, and doctor says so.
      expect(check).toMatchObject({
        ok: false,
        severity: "warning",
        detail:
          "the vllm version of vllm/vllm-openai:latest could not be read on the node; " +
          "set engine_version in recipes/latest.toml",
      });
    } finally {
      writeFileSync(stackFile, text);
    }
  });
});
