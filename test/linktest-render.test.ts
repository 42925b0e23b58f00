/**
 * The link test's scripts as fabric/linktest.render.ts writes them, on the fabric goldens' site
 * (test/fixtures/sites/fabric.yaml): each docker rank's container gets exactly the flags and the
 * environment of the engine's own container on that node; a tmux rank runs with the node's engine
 * environment; the plan says it only where sm121:fabricCheck asks and the deployment spans nodes.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import type { Site } from "../src/recipe/types";
import { renderSite } from "../src/render/deployment";
import { linkTestPlan } from "../src/fabric/linktest.render";
import { deploymentPlan } from "../src/render/plan";
import { quote } from "../src/text/shell";

const ROOT = join(__dirname, "..");
const recipes = loadRecipes(join(ROOT, "recipes"), "recipes");
const site = readSite(join(__dirname, "fixtures", "sites", "fabric.yaml"), "fabric");
const withCheck: Site = { ...site, fabric: { ...site.fabric, check: true, minBusBandwidthGBps: 12 } };
const all = new Map(recipes);
for (const [k, r] of recipes) all.set(`${k}-fabric`, { ...r, name: `${k}-fabric` });
const render = (s: Site) => renderSite(s, all, { root: ROOT });
const find = (s: Site, name: string) => {
  const b = render(s).find((x) => x.deployment === name);
  if (b === undefined) throw new Error(`no deployment ${name}`);
  return b;
};

describe("the link test's scripts", () => {
  it("runs each docker rank with the engine container's flags and env, met at rank 0's address", () => {
    const b = find(site, "two-docker");
    const plan = linkTestPlan(site, b);
    expect(plan.rdma).toBe(true);
    b.nodes.forEach((nb, i) => {
      const script = plan.scripts[i] ?? "";
      // The flags between the image's network and the env: the launch's, word for word.
      const flags = /--network host .*?(?= \\\n {2}--env-file)/s.exec(nb.launch)?.[0];
      expect(flags).toContain("--device /dev/infiniband");
      expect(script).toContain(flags ?? "none");
      for (const [k, v] of Object.entries(nb.env)) expect(script).toContain(`-e ${quote(`${k}=${v}`)}`);
      expect(script).toContain(`-e RANK=${nb.rank}`);
      expect(script).toContain("-e WORLD_SIZE=2");
      expect(script).toContain("-e MASTER_ADDR=192.0.2.11");
      expect(script).toContain("-e NCCL_DEBUG=INFO");
      expect(script).toContain(`--name sm121-two-docker-linktest-${nb.rank}`);
      expect(script).toContain(`--entrypoint python3 ${nb.image ?? "none"} /run/sm121-linktest/allreduce.py`);
    });
    expect(plan.scripts[0]).toContain("NCCL_IB_HCA=rocep1s0f1:1,roceP2p1s0f1:1");
    expect(plan.scripts[1]).toContain("NCCL_IB_HCA=rocep1s0f0:1");
  });

  it("with nccl-tests: sleeping rank containers as the engine's, mpirun in rank 0's over the fabric addresses", () => {
    const b = find(site, "two-docker");
    const mpi = linkTestPlan(site, b).mpi;
    if (mpi === undefined) throw new Error("a docker deployment's plan has an nccl-tests run");
    expect(mpi.probe).toContain(`docker run --rm --entrypoint /bin/sh ${b.nodes[0]?.image ?? "none"} -c`);
    b.nodes.forEach((nb, i) => {
      const start = mpi.start[i] ?? "";
      const flags = /--network host .*?(?= \\\n {2}--env-file)/s.exec(nb.launch)?.[0];
      expect(start).toContain(flags ?? "none");
      // Each rank's own node's variables: mpirun forwards none.
      for (const [k, v] of Object.entries(nb.env)) expect(start).toContain(`-e ${quote(`${k}=${v}`)}`);
      expect(start).toContain(`--label sm121.linktest=two-docker`);
      expect(start).toContain(`--entrypoint sleep ${nb.image ?? "none"} infinity`);
      expect(mpi.stop[i]).toBe(`docker rm -f sm121-two-docker-linktest-${nb.rank} >/dev/null 2>&1 || true`);
    });
    expect(mpi.run).toBe(
      "timeout --kill-after=10 120 docker exec sm121-two-docker-linktest-0 mpirun --allow-run-as-root " +
        "-np 2 -H 192.0.2.11:1,192.0.2.12:1 --bind-to none --mca plm_rsh_agent /run/sm121-linktest/rsh " +
        "@SM121_ALL_REDUCE_PERF@ -b 8 -e 1G -f 2 -g 1 2>&1",
    );
    // A peer's key reaches only the deployment's link-test container there.
    expect(mpi.receiver).toContain('exec docker exec -i "$c" sh -c "$SSH_ORIGINAL_COMMAND"');
    expect(mpi.receiver).toContain("--filter label=sm121.linktest=two-docker");
    expect(linkTestPlan(site, find(site, "two-tmux")).mpi).toBeUndefined();
  });

  it("runs a tmux rank on the node with the engine's environment", () => {
    const b = find(site, "two-tmux");
    const script = linkTestPlan(site, b).scripts[1] ?? "";
    expect(script).not.toContain("docker");
    expect(script).toContain("export NCCL_SOCKET_IFNAME=enp1s0f1np1");
    expect(script).toContain("export RANK=1");
    expect(script).toMatch(/exec python3 "\$HOME"\/.*\/linktest\/allreduce\.py \) 2>&1$/);
  });

  it("is in the bundle and the plan only with sm121:fabricCheck, for deployments across nodes", () => {
    expect(find(site, "two-docker").linkTest).toBeUndefined();
    expect(deploymentPlan(find(site, "two-docker"))).not.toContain("link test");
    const checked = find(withCheck, "two-docker");
    expect(checked.linkTest?.minBusBandwidthGBps).toBe(12);
    expect(deploymentPlan(checked)).toContain(
      "link test before a start (sm121:fabricCheck), all-reduce between spark1, spark2: " +
        "fails on NET/Socket, under 12 GB/s busbw\n",
    );
    expect(find(withCheck, "one-node").linkTest).toBeUndefined();
  });
});
