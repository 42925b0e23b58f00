/**
 * A two-node docker vLLM with RDMA in its containers, through the real Pulumi CLI on real Docker
 * Engines: the node's device directory mapped to /dev/infiniband, IPC_LOCK, memlock unlimited and
 * a high open-files limit as sm121 renders them for a Spark. The site's OCI runtime wrapper lowers
 * the two limits to the sandbox's own and says so in each container's log; everything else runs
 * as rendered.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { pairProject } from "../helpers/fabric";
import type { E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import { devicesDir } from "../site/fabric";
import type { SimNode } from "../site/site";
import { modelsIn } from "../helpers/json";

const AT = allocate(__filename);

describe.sequential("RDMA in real containers through pulumi up", () => {
  let e: E2E;
  beforeAll(async () => {
    e = await pairProject({
      name: "fabricdocker",
      nodes: ["fd1", "fd2"],
      at: AT.site(),
      rdma: "[{ hca: rocep1s0f1, gidIndex: 3 }]",
    });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("serves with the devices, IPC_LOCK and the limits in each container", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    for (const [rank, n] of e.site.nodes.entries()) {
      const name = `sm121-pair-${rank}`;
      const host = await sshOk(
        e.site,
        n,
        `docker inspect -f '{{json .HostConfig.Devices}} {{json .HostConfig.Ulimits}}' ${name}`,
      );
      expect(JSON.parse(`[${host.trim().split(" ").join(",")}]`)).toEqual([
        [{ PathOnHost: devicesDir(n), PathInContainer: "/dev/infiniband", CgroupPermissions: "rwm" }],
        [
          { Name: "memlock", Hard: -1, Soft: -1 },
          { Name: "nofile", Hard: 1048576, Soft: 1048576 },
        ],
      ]);
      // IPC_LOCK (capability 14) is in the engine's effective set (Docker's default set lacks it).
      const capEff = await sshOk(e.site, n, `docker exec ${name} awk '/^CapEff/ { print $2 }' /proc/1/status`);
      expect((BigInt(`0x${capEff.trim()}`) >> 14n) & 1n).toBe(1n);
      // What the engine (the container's pid 1) has: the node's RDMA devices, and the hard limits
      // the sandbox allows (memlock in bytes), no more than it asked for.
      const inside = await sshOk(
        e.site,
        n,
        `docker exec ${name} sh -c "ls /dev/infiniband; ` +
          `awk '/locked memory|open files/ { print \\$(NF - 1) }' /proc/1/limits"`,
      );
      const sandbox = (await sshOk(e.site, n, "ulimit -H -l; ulimit -H -n"))
        .trim()
        .split("\n")
        .map((v) => (v === "unlimited" ? Infinity : Number(v)));
      const [memlock = 0, nofile = 0] = sandbox;
      // /proc/<pid>/limits lists open files before locked memory.
      const limits = [String(Math.min(1048576, nofile)), memlock === Infinity ? "unlimited" : String(memlock * 1024)];
      expect(inside).toBe(`rdma_cm\nuverbs0\nuverbs1\nuverbs2\n${limits.join("\n")}\n`);
      expect(await sshOk(e.site, n, `docker logs ${name} 2>&1 | grep -c 'lowered to soft' || true`)).not.toBe("0\n");
    }
    const head = e.site.nodes[0] as SimNode;
    const models = await sshOk(e.site, head, `curl -s http://${head.ip}:8000/v1/models`);
    expect(modelsIn(models)[0]?.id).toBe("qwen3-32b");
  });

  it("looks at each node over one SSH connection in a preview: the fabric, the deployment, its files", async () => {
    const log = (n: SimNode) => readFileSync(join(n.root, "var", "log", "sshd.log"), "utf8").split("\n");
    const accepted = (n: SimNode) => log(n).filter((l) => l.includes("Accepted publickey")).length;
    const nodes = e.site.nodes;
    const before = nodes.map(accepted);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(nodes.map((n, i) => accepted(n) - (before[i] ?? 0))).toEqual([1, 1]);
  });

  it("destroys: no container is left", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    for (const n of e.site.nodes) expect(await sshOk(e.site, n, "docker ps -aq")).toBe("");
  });
});
