/**
 * Node locks: two stacks working on one node at once are serialized by a flock on the node; the
 * loser says at once whom it waits for, and after a bounded wait fails with "node spark1 is busy:
 * held by stack <stack> (<user>@<host>, pid <pid>) since <time>".
 */
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { setEngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const recipe = (port: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b-${port}"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = ${port}
[readiness]
timeout_s = 60
`;

// The tests run in order on one site, each from the state the one before left.
describe.sequential("node locks", () => {
  let e: E2E;
  let n: SimNode;
  beforeAll(async () => {
    e = await e2eProject({
      name: "locks",
      nodes: ["spark1"],
      ...AT.site(),
      recipes: { "slow.toml": recipe(8000), "quick.toml": recipe(8001) },
      config: () => "  sm121:deployments:\n    - { recipe: slow, nodes: [spark1] }",
    });
    n = e.site.nodes[0] as SimNode;
    // A second stack of the same project, on the same node, that gives up after 1 s.
    const first = readFileSync(join(e.dir, "Pulumi.sim.yaml"), "utf8");
    expect((await e.pulumi.run(["stack", "init", "other"])).code).toBe(0);
    const key = readFileSync(e.site.clientKey, "utf8");
    expect(
      (await e.pulumi.run(["config", "set", "--secret", "sm121:sshPrivateKey", "--stack", "other"], { input: key }))
        .code,
    ).toBe(0);
    const secret =
      /\n( {2}sm121:sshPrivateKey:\n(?: {4}.*\n)+)/.exec(readFileSync(join(e.dir, "Pulumi.other.yaml"), "utf8"))?.[1] ??
      "";
    const salt = /^encryptionsalt: .*\n/m.exec(readFileSync(join(e.dir, "Pulumi.other.yaml"), "utf8"))?.[0] ?? "";
    writeFileSync(
      join(e.dir, "Pulumi.other.yaml"),
      [
        salt.trimEnd(),
        "config:",
        `  sm121:knownHosts: ${e.site.knownHosts}`,
        "  sm121:minMemAvailableGiB: 1",
        "  sm121:lockWaitS: 1",
        nodesYaml(e.site),
        "  sm121:deployments:",
        "    - { recipe: quick, nodes: [spark1] }",
        secret,
      ].join("\n"),
    );
    expect((await e.pulumi.run(["stack", "select", "sim"])).code).toBe(0);
    expect(first).toContain("sm121:deployments");
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("makes the second stack wait, then fail with the holder, while the first serves", async () => {
    setEngineBehaviour(n, { startDelayS: 6 });
    const slow = e.up();
    // The first stack holds the node once its serve has begun (the holder file names it).
    const holder = join(n.home, ".sm121", "node.lock.holder");
    const held = () => existsSync(holder) && readFileSync(holder, "utf8").startsWith("stack sim ");
    while (!held()) await new Promise((r) => setTimeout(r, 50));
    // The node is sim's: the other stack may take it (SM121_ALLOW_TAKEOVER), but only once sim's up is done.
    const takeover = { env: { SM121_ALLOW_TAKEOVER: "spark1" } };
    const other = await e.pulumi.run(["up", "--yes", "--skip-preview", "--stack", "other"], takeover);
    expect(other.code).not.toBe(0);
    const sim = String.raw`stack sim \(\S+@\S+, pid \d+\) since \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`;
    expect(other.all).toMatch(new RegExp(`spark1: waiting up to 1 s for the node's lock, held by ${sim}`));
    expect(other.all).toMatch(new RegExp(`node spark1 is busy: held by ${sim}; waited 1 s`));
    const first = await slow;
    expect(first.code, first.all).toBe(0);
    setEngineBehaviour(n, null);
    const retry = await e.pulumi.run(["up", "--yes", "--skip-preview", "--stack", "other"], takeover);
    expect(retry.code, retry.all).toBe(0);
    expect(readFileSync(holder, "utf8")).toMatch(/^stack other \(\S+@\S+, pid \d+\) since /);
  });

  it("destroys both", async () => {
    expect((await e.pulumi.run(["destroy", "--yes", "--skip-preview", "--stack", "other"])).code).toBe(0);
    expect((await e.destroy()).code).toBe(0);
  });
});
