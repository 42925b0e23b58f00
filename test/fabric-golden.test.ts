/**
 * The fabric's goldens: the plan of each deployment (every variable and container flag the fabric
 * adds, per node), then per node the exact `docker run` / tmux launch and the engine's env file.
 * Sites: test/fixtures/sites/fabric.yaml (one node; two nodes with RDMA on docker; two nodes on
 * tmux; a script recipe on two nodes, whose .env carries the fabric) and fabric-privileged.yaml.
 * Update with UPDATE_GOLDEN=1 and review the diff.
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { deploymentPlan } from "../src/render/plan";
import type { DeploymentBundle } from "../src/render/types";
import { expectGolden } from "./helpers/golden";

const ROOT = join(__dirname, "..");
const loaded = loadRecipes(join(ROOT, "recipes"), "recipes");
/**
 * The `-fabric` variants leave NCCL_IB_DISABLE to the site too, as a recipe for a site with a
 * fabric does. (A recipe never names a node's interface: validate refuses it.)
 */
const recipes = new Map(loaded);
for (const name of ["qwen3-32b-vllm-tp2", "qwen3-30b-sglang-tmux"]) {
  const r = loaded.get(name);
  if (r === undefined) throw new Error(`no recipe ${name}`);
  const { NCCL_IB_DISABLE: _ib, ...env } = r.env;
  recipes.set(`${name}-fabric`, { ...r, name: `${name}-fabric`, env });
}

function bundles(file: string, stack: string): DeploymentBundle[] {
  return renderSite(readSite(join(__dirname, "fixtures", "sites", file), stack), recipes, { root: ROOT });
}

function goldenText(b: DeploymentBundle): string {
  const parts = [`# plan of ${b.deployment}`, deploymentPlan(b)];
  for (const n of b.nodes) {
    parts.push(`# ${n.node} (rank ${n.rank}): launch`, n.launch, "");
    const shown = (x: { path: string }) => ["engine.env", "run.sh", "/.env"].some((end) => x.path.endsWith(end));
    for (const f of n.files.filter(shown)) {
      parts.push(`# ${n.node}: ${f.path}`, f.content);
    }
  }
  return parts.join("\n");
}

const all = [...bundles("fabric.yaml", "fabric"), ...bundles("fabric-privileged.yaml", "fabric-privileged")];

describe("fabric goldens", () => {
  it.each(all.map((b) => [b.deployment, b] as const))("%s", (name, b) => {
    expectGolden(join(__dirname, "golden", "fabric", `${name}.txt`), goldenText(b), "test/fabric-golden.test.ts");
  });

  it("a docker deployment across nodes gets the RDMA devices, IPC_LOCK and the limits; one node gets none", () => {
    const two = all.find((b) => b.deployment === "two-docker");
    const one = all.find((b) => b.deployment === "one-node");
    for (const n of two?.nodes ?? []) {
      expect(n.start).toContain(
        "--device /dev/infiniband --cap-add IPC_LOCK --ulimit memlock=-1:-1 --ulimit nofile=1048576:1048576",
      );
      expect(n.env["NCCL_IB_DISABLE"]).toBe("0");
    }
    expect(one?.nodes[0]?.start).not.toContain("--device");
    expect(one?.nodes[0]?.env["NCCL_IB_HCA"]).toBe("rocep1s0f1:1");
  });

  it("each node names its own interface and HCAs", () => {
    const two = all.find((b) => b.deployment === "two-docker");
    expect(two?.nodes.map((n) => n.env["NCCL_SOCKET_IFNAME"])).toEqual(["enp1s0f1np1", "enp1s0f0np0"]);
    expect(two?.nodes.map((n) => n.env["UCX_NET_DEVICES"])).toEqual(["enp1s0f1np1", "enp1s0f0np0"]);
    const p = all.find((b) => b.deployment === "two-privileged");
    expect(p?.nodes.map((n) => n.env["NCCL_SOCKET_IFNAME"])).toEqual(["enp1s0f1np1", "enp1s0f0np0"]);
    expect(two?.nodes.map((n) => n.env["NCCL_IB_HCA"])).toEqual(["rocep1s0f1:1,roceP2p1s0f1:1", "rocep1s0f0:1"]);
    expect(two?.nodes.map((n) => n.env["VLLM_HOST_IP"])).toEqual(["192.0.2.11", "192.0.2.12"]);
  });

  it("a script recipe's start.sh container gets each node's fabric as -e pairs of EXTRA_DOCKER_ARGS", () => {
    const s = all.find((b) => b.deployment === "two-script");
    const extra = s?.nodes.map((n) => n.envKeys?.["EXTRA_DOCKER_ARGS"]);
    const profilePairs =
      "-e VLLM_USE_V2_MODEL_RUNNER=1 -e TRITON_CACHE_DIR=/triton-cache " +
      "-v /home/ops/.cache/triton-qwen38:/triton-cache ";
    expect(extra).toEqual([
      profilePairs +
        "-e NCCL_SOCKET_IFNAME=enp1s0f1np1 -e GLOO_SOCKET_IFNAME=enp1s0f1np1 -e TP_SOCKET_IFNAME=enp1s0f1np1 " +
        "-e UCX_NET_DEVICES=enp1s0f1np1 -e OMPI_MCA_btl_tcp_if_include=enp1s0f1np1 " +
        "-e NCCL_IB_HCA=rocep1s0f1:1,roceP2p1s0f1:1 -e NCCL_IB_GID_INDEX=3 -e NCCL_IB_DISABLE=0 " +
        "-e VLLM_HOST_IP=192.0.2.31",
      profilePairs +
        "-e NCCL_SOCKET_IFNAME=enp1s0f0np0 -e GLOO_SOCKET_IFNAME=enp1s0f0np0 -e TP_SOCKET_IFNAME=enp1s0f0np0 " +
        "-e UCX_NET_DEVICES=enp1s0f0np0 -e OMPI_MCA_btl_tcp_if_include=enp1s0f0np0 " +
        "-e NCCL_IB_HCA=rocep1s0f0:1 -e NCCL_IB_GID_INDEX=3 -e NCCL_IB_DISABLE=0 -e VLLM_HOST_IP=192.0.2.32",
    ]);
    const plan = s === undefined ? "" : deploymentPlan(s);
    expect(plan).toContain("fabric memlock: the preflight refuses a node whose `ulimit -l` is not unlimited\n");
    expect(plan).toContain("script2 fabric interface enp1s0f0np0, address 192.0.2.32 (the rendezvous address)\n");
  });

  it("the privileged site runs --privileged with the limits and no device list", () => {
    const p = all.find((b) => b.deployment === "two-privileged");
    expect(p?.nodes[0]?.start).toContain("--privileged --ulimit memlock=-1:-1 --ulimit nofile=65536:65536");
    expect(p?.nodes[0]?.start).not.toContain("--cap-add");
  });
});
