/**
 * A script recipe (seed 001's qwen38-flash) on two nodes with a fabric, through the real Pulumi
 * CLI: each node's .env carries that node's fabric variables as -e pairs of EXTRA_DOCKER_ARGS, and
 * the container start.sh runs has them; with RDMA declared, the memlock preflight refuses the
 * launch as it does a tmux or native one.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import { setFabric, sparkFabric } from "../site/fabric";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode, SimSite } from "../site/site";

const AT = allocate(__filename);

const RECIPE_DIR = "spark-recipes/qwen38-flash";

function stackYaml(site: SimSite, rdma: string): string {
  const extra = (n: SimNode) =>
    [
      `      vars: { tritonCache: ${n.home}/.cache/triton-qwen38 }`,
      "      recipes:",
      `        qwen38-flash: { dir: ~/${RECIPE_DIR}, container: qwen38-flash, ` +
        "ownedMounts: [/recipe/files, /recipe/mtp_draft_vocab.json] }",
      `      fabric: { interface: enp1s0f1np1, rdma: ${rdma} }`,
    ].join("\n");
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    nodesYaml(site, extra, () => ({ BIND: "127.0.0.1", PORT: String(AT.port(0)) })),
    "  sm121:deployments:",
    "    - { name: flash, recipe: qwen38-flash, profile: datagen, nodes: [sf1, sf2] }",
    "",
  ].join("\n");
}

describe.sequential("a script recipe across two nodes gets the fabric", () => {
  let e: E2E;
  const nodes = () => e.site.nodes;
  beforeAll(async () => {
    e = await e2eProject({
      name: "scriptfabric",
      nodes: ["sf1", "sf2"],
      ...AT.site(),
      config: () => "",
    });
    for (const n of nodes()) {
      makeScriptRecipe(n, RECIPE_DIR);
      mkdirSync(join(n.home, "models"), { recursive: true });
      setFabric(n, sparkFabric(n.ip));
    }
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("refuses RDMA for a script launch while memlock is limited, before anything runs", async () => {
    e.writeStack(stackYaml(e.site, "[{ hca: rocep1s0f1, gidIndex: 3 }]"));
    const up = await e.up();
    expect(up.code).not.toBe(0);
    for (const n of ["sf1", "sf2"])
      expect(up.all).toContain(
        `${n}: \`ulimit -l\` is 8192 KiB for a script launch of flash; RDMA pins the engine's buffers`,
      );
    for (const n of nodes()) expect(await sshOk(e.site, n, "docker ps -aq")).toBe("");
  });

  it("serves with each node's fabric variables in the container start.sh runs", async () => {
    e.writeStack(stackYaml(e.site, "none"));
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    for (const n of nodes()) {
      // The node's own .env (the plan shows the same line: test/golden/fabric/two-script.txt).
      expect(readFileSync(join(n.home, RECIPE_DIR, ".env"), "utf8")).toContain(
        `EXTRA_DOCKER_ARGS="-e VLLM_USE_V2_MODEL_RUNNER=1 -e TRITON_CACHE_DIR=/triton-cache ` +
          `-v ${n.home}/.cache/triton-qwen38:/triton-cache -e NCCL_SOCKET_IFNAME=enp1s0f1np1 `,
      );
      const env = await sshOk(e.site, n, "docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' qwen38-flash");
      const pair = (l: string): [string, string] => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)];
      const got = Object.fromEntries(env.trim().split("\n").map(pair));
      expect(got).toMatchObject({
        NCCL_SOCKET_IFNAME: "enp1s0f1np1",
        GLOO_SOCKET_IFNAME: "enp1s0f1np1",
        TP_SOCKET_IFNAME: "enp1s0f1np1",
        UCX_NET_DEVICES: "enp1s0f1np1",
        OMPI_MCA_btl_tcp_if_include: "enp1s0f1np1",
        NCCL_IB_DISABLE: "1",
        VLLM_HOST_IP: n.ip,
      });
    }
  });
});
