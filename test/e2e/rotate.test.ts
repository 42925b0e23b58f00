/**
 * What changes around a running deployment, through the real Pulumi CLI: a rotated API key
 * re-serves it and the engine then answers only the new key; hooks run once per engine start
 * (before_serve) and stop (after_stop); a node's new ssh address shows in the preview and is used
 * by the next operations, restarting nothing. The blocks build on each other in order.
 */
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { killNodeSshd, restartNodeSshd } from "../site/faults";
import type { SimNode } from "../site/site";
import { knownHostsLine } from "../site/sshd";

const AT = allocate(__filename);

const RECIPE = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "keyed"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
[hooks]
before_serve = ["echo before >> ~/hooks.log"]
after_stop = ["echo after >> ~/hooks.log"]
[readiness]
timeout_s = 60
`;
const CONFIG = "  sm121:deployments:\n    - { name: keyed, recipe: keyed, nodes: [r1] }";

describe.sequential("rotation, hooks and addresses", () => {
  let e: E2E;
  let r1: SimNode;
  const sh = async (script: string) => (await sshScript(e.site, r1, script)).stdout;
  const code = (key: string) =>
    sh(
      `printf 'header = "Authorization: Bearer %s"\\n' ${key === "" ? "none" : key} | curl -s -o ` +
        `/dev/null -w '%{http_code}' -K - http://$SIM_NODE_IP:8000/v1/models`,
    );
  const setKey = async (key: string) =>
    expect((await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: key })).code).toBe(0);
  const hooks = () => readFileSync(join(r1.home, "hooks.log"), "utf8").trim().split("\n");

  beforeAll(async () => {
    e = await e2eProject({
      name: "rotate",
      nodes: ["r1"],
      ...AT.site(),
      recipes: { "keyed.toml": RECIPE },
      config: () => CONFIG,
    });
    r1 = e.site.nodes[0] as SimNode;
    writeFileSync(join(r1.home, "hooks.log"), "");
    await setKey("rotate-key-one");
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves with the first key; the hook ran once before the start", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await code("rotate-key-one")).toBe("200");
    expect(await code("")).toBe("401");
    expect(hooks()).toEqual(["before"]);
  });

  it("re-serves a rotated key, names the secret and never its value", async () => {
    await setKey("rotate-key-two");
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(/~ 1 to update/);
    expect(preview.all).toMatch(/API_KEY/);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain("secret rotated: sm121:apiKey");
    for (const out of [preview.all, up.all])
      for (const k of ["rotate-key-one", "rotate-key-two"]) expect(out).not.toContain(k);
    expect(await code("rotate-key-two")).toBe("200");
    expect(await code("rotate-key-one")).toBe("401");
    // One stop and one start: after_stop once, before_serve once more.
    expect(hooks()).toEqual(["before", "after", "before"]);
  });

  it("restarts with SM121_RESTART=1 (hooks again) and a plain up restarts nothing", async () => {
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code, up.all).toBe(0);
    expect(hooks()).toEqual(["before", "after", "before", "after", "before"]);
    const quiet = await e.up();
    expect(quiet.all).not.toMatch(/updated/);
    expect(hooks()).toHaveLength(5);
  });

  it("follows a node's new ssh port: preview shows it, up restarts nothing, refresh and destroy use it", async () => {
    const started = await sh("docker inspect -f '{{.State.StartedAt}}' sm121-keyed-0");
    killNodeSshd(e.site, r1);
    const oldPort = r1.sshPort;
    const cfg = join(r1.root, "etc", "ssh", "sshd_config");
    writeFileSync(
      cfg,
      readFileSync(cfg, "utf8").replace(`ListenAddress ${r1.ip}:${r1.sshPort}`, `ListenAddress ${r1.ip}:2316`),
    );
    r1.sshPort = 2316;
    await restartNodeSshd(e.site, r1);
    const pub = readFileSync(join(r1.root, "etc", "ssh", "ssh_host_ed25519_key.pub"), "utf8").trim();
    appendFileSync(e.site.knownHosts, `${knownHostsLine(r1.ip, 2316, pub)}\n`);
    e.reconfigure(CONFIG);
    await e.pulumi.run(["config", "set", "--secret", "sm121:apiKey"], { input: "rotate-key-two" });
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toMatch(new RegExp(String.raw`restarts nothing: r1: connection \S+:${oldPort} -> \S+:2316`));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(up.all).toContain("r1: connection");
    expect(await sh("docker inspect -f '{{.State.StartedAt}}' sm121-keyed-0")).toBe(started);
    expect((await e.refresh()).code).toBe(0);
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    expect(await sh("docker ps -aq | wc -l")).toBe("0\n");
    expect(hooks().at(-1)).toBe("after");
  });
});
