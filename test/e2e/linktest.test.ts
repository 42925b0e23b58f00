/**
 * The link test on the simulated site: `sm121 doctor --fabric` between the two nodes of a docker
 * deployment, in its image with the RDMA access the engine's containers get (the NCCL stand-in,
 * test/site/shims/nccl/allreduce.js, meets its peer over TCP and decides IB or Socket as NCCL
 * does), and sm121:fabricCheck stopping an up before the old engine stops.
 */
import { readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { sm121 } from "../cli-helpers";
import { pairDeployment, pairProject } from "../helpers/fabric";
import type { E2E } from "../helpers/project";
import { sshOk } from "../site/exec";
import { devicesDir, setFabric, sparkFabric } from "../site/fabric";

const AT = allocate(__filename);

describe.sequential("the link test between two docker nodes", () => {
  let e: E2E;
  const nodes = () => e.site.nodes;
  beforeAll(async () => {
    e = await pairProject({
      name: "linktest",
      nodes: ["lt1", "lt2"],
      at: AT.site(),
      rdma: "[{ hca: rocep1s0f1, gidIndex: 3 }, { hca: roceP2p1s0f1, gidIndex: 3 }]",
      config: "  sm121:fabric: { minBusBandwidthGBps: 0.5, linkTestTimeoutS: 20 }",
    });
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("passes over NET/IB where the containers get the devices and IPC_LOCK", async () => {
    const r = await sm121(e, ["doctor", "--fabric", "pair"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("link test of pair on lt1, lt2: NCCL all-reduce, 2 ranks\n");
    expect(r.stdout).toContain(
      "  tool        sm121's torch all-reduce script: the image has no nccl-tests all_reduce_perf\n",
    );
    expect(r.stdout).toContain("  transport   NET/IB (rocep1s0f1:1/RoCE roceP2p1s0f1:1/RoCE), fabric declared RDMA\n");
    // The GB10 RoCE run's numbers (test/fixtures/fabric/nccl-tests-gb10-roce.txt), per size.
    expect(r.stdout).toContain(
      [
        "        size   busbw (GB/s)   in-place",
        "          8K           0.23       0.27",
        "         16K           0.52       0.53",
        "         32K           0.83       0.88",
        "         64K           0.96       1.01",
      ].join("\n"),
    );
    expect(r.stdout).toContain("  ok: NET/IB, busbw 0.96 GB/s at 64K, minimum 0.5 GB/s\n");
    const json = await sm121(e, ["doctor", "--fabric", "pair", "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toMatchObject({
      deployment: "pair",
      ok: true,
      rdma: true,
      minBusBandwidthGBps: 0.5,
      transport: { kind: "ib", name: "IB" },
      ranks: [
        { node: "lt1", rank: 0, code: 0 },
        { node: "lt2", rank: 1, code: 0 },
      ],
    });
    // The ranks' containers are gone (--rm), the engine's name never used.
    for (const n of nodes()) expect(await sshOk(e.site, n, "docker ps -aq")).toBe("");
  });

  it("reports in the run's language with --lang de, the tool's table as it printed it", async () => {
    const r = await sm121(e, ["doctor", "--fabric", "pair", "--lang", "de"]);
    expect(r.code, r.stdout + r.stderr).toBe(0);
    expect(r.stdout).toContain("Verbindungstest von pair auf lt1, lt2: NCCL-All-Reduce, 2 Ranks\n");
    expect(r.stdout).toContain(
      "  Werkzeug      das torch-all-reduce-Skript von sm121: das Image hat kein all_reduce_perf von nccl-tests\n",
    );
    const ports = "(rocep1s0f1:1/RoCE roceP2p1s0f1:1/RoCE)";
    expect(r.stdout).toContain(`  Transport     NET/IB ${ports}, Fabric als RDMA deklariert\n`);
    const table = ["       Größe   busbw (GB/s)   in-place", "          8K           0.23       0.27"];
    expect(r.stdout).toContain(table.join("\n"));
    expect(r.stdout).toContain("  ok: NET/IB, busbw 0.96 GB/s bei 64K, Minimum 0.5 GB/s\n");
  });

  it("fails on NET/Socket, with the numbers, where the containers get no verbs device", async () => {
    // The nodes lost their uverbs devices (ib_uverbs not loaded): the containers get rdma_cm only.
    for (const n of nodes())
      for (const d of readdirSync(devicesDir(n)).filter((f) => f.startsWith("uverbs"))) rmSync(join(devicesDir(n), d));
    try {
      const r = await sm121(e, ["doctor", "--fabric", "pair"]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      expect(r.stdout).toContain(
        `  transport   NET/Socket (${nodes()
          .map((n) => `enp1s0f1np1:${n.ip}<0>`)
          .join(" ")}), fabric declared RDMA\n`,
      );
      expect(r.stdout).toContain("  FAILED (busbw 0.00 GB/s at 8, minimum 0.5 GB/s):\n");
      expect(r.stdout).toContain(
        "  - NCCL chose NET/Socket on a fabric declared RDMA (lt1, lt2): the ranks reach no RDMA device.",
      );
      expect(r.stdout).toContain("  - bus bandwidth 0.00 GB/s at 8 is under sm121:fabric.minBusBandwidthGBps 0.5.");
    } finally {
      for (const n of nodes()) setFabric(n, sparkFabric(n.ip));
    }
  });

  it("fails on NET/Socket where one node lost its devices: its rank is on sockets, the pair never meets", async () => {
    const lt2 = nodes()[1];
    if (lt2 === undefined) throw new Error("no lt2");
    const verbs = readdirSync(devicesDir(lt2)).filter((f) => f.startsWith("uverbs"));
    for (const d of verbs) rmSync(join(devicesDir(lt2), d));
    try {
      const r = await sm121(e, ["doctor", "--fabric", "pair"]);
      expect(r.code, r.stdout + r.stderr).toBe(1);
      // lt1's rank is on IB, lt2's on sockets: one socket rank makes the all-reduce a socket one.
      expect(r.stdout).toContain(
        `  transport   NET/Socket (rocep1s0f1:1/RoCE roceP2p1s0f1:1/RoCE enp1s0f1np1:${lt2.ip}<0>)`,
      );
      expect(r.stdout).toContain("  - NCCL chose NET/Socket on a fabric declared RDMA (lt1, lt2)");
      expect(r.stdout).toContain("  - the all-reduce printed no result table");
      expect(r.stdout).toContain("NCCL INFO NET/IB : No device found.");
      expect(r.stdout).toContain("NCCL WARN socketFinalizeAccept: wrong type 4 != 3");
      expect(r.stdout).toContain("Watchdog caught collective operation timeout");
    } finally {
      setFabric(lt2, sparkFabric(lt2.ip));
    }
  });

  it("runs nccl-tests' all_reduce_perf under mpirun where the image has it, mpirun and ssh", async () => {
    const recipe = join(e.dir, "recipes", "pair.toml");
    const before = readFileSync(recipe, "utf8");
    const image = "registry.example/spark/vllm-nccl-tests:26.01";
    writeFileSync(recipe, before.replace("nvcr.io/nvidia/vllm:26.01-py3", image));
    try {
      const r = await sm121(e, ["doctor", "--fabric", "pair"]);
      expect(r.code, r.stdout + r.stderr).toBe(0);
      const bin = "/opt/nccl-tests/build/all_reduce_perf";
      expect(r.stdout).toContain(
        `  tool        nccl-tests' all_reduce_perf under mpirun (${bin}): ` +
          `the image has nccl-tests' ${bin}, mpirun and ssh\n`,
      );
      expect(r.stdout).toContain(
        "  transport   NET/IB (rocep1s0f1:1/RoCE roceP2p1s0f1:1/RoCE), fabric declared RDMA\n",
      );
      expect(r.stdout).toContain("         64K           0.96       1.01\n");
      // nccl-tests' own summary: the mean busbw of the four sizes.
      expect(r.stdout).toContain(`  avg busbw   0.64 GB/s (nccl-tests' "# Avg bus bandwidth")\n`);
      expect(r.stdout).toContain("  ok: NET/IB, busbw 0.96 GB/s at 64K, minimum 0.5 GB/s\n");
      // The ranks' containers are gone, and so is the run's key on the peer.
      for (const n of nodes()) expect(await sshOk(e.site, n, "docker ps -aq")).toBe("");
      const lt2 = nodes()[1];
      if (lt2 === undefined) throw new Error("no lt2");
      expect(await sshOk(e.site, lt2, "cat ~/.ssh/authorized_keys 2>/dev/null || true")).not.toContain("sm121-fanout-");
    } finally {
      writeFileSync(recipe, before);
    }
  });

  it("with sm121:fabricCheck, a failing link test stops the up before the old engine stops", async () => {
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    const started = async () =>
      Promise.all(
        nodes().map((n, rank) => sshOk(e.site, n, `docker inspect -f '{{.State.StartedAt}}' sm121-pair-${rank}`)),
      );
    const before = await started();
    e.reconfigure(
      `  sm121:fabricCheck: true\n  sm121:fabric: { minBusBandwidthGBps: 5 }\n${pairDeployment(["lt1", "lt2"])}`,
    );
    const preview = await e.preview({ SM121_RESTART: "1" });
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(
      "+ link test before a start (sm121:fabricCheck), all-reduce between lt1, lt2: " +
        "fails on NET/Socket, under 5 GB/s busbw\n",
    );
    const check = await e.up({ SM121_RESTART: "1" });
    expect(check.code).not.toBe(0);
    expect(check.all).toContain("pair: link test between lt1, lt2 (sm121:fabricCheck), before the start");
    expect(check.all).toContain("bus bandwidth 0.96 GB/s at 64K is under sm121:fabric.minBusBandwidthGBps 5.");
    expect(check.all).toContain("the link test of pair failed; nothing was stopped");
    expect(check.all).not.toContain("pair: stopping on");
    // A preflight's failure: the deployment is not marked failed, its state stays "serving".
    expect(check.all).not.toContain("marked failed");
    // The old engine still runs, started when it was.
    expect(await started()).toEqual(before);
  });
});
