/**
 * The simulated site's NCCL stand-in (test/site/shims/nccl/allreduce.js) on its own: two ranks
 * meet over TCP and rank 0 prints nccl-tests' table, which sm121's parser reads as it reads the
 * real runs; a rank whose peer never comes fails as torch's rendezvous does; without the RDMA
 * devices (this machine has none) NCCL is on sockets; each rank decides IB or Socket from what its
 * own node has (its HCAs, its uverbs devices, NCCL_IB_HCA, NCCL_IB_DISABLE), and ranks that decide
 * differently never finish, as with NCCL.
 */
import { execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it } from "vitest";
import { allocate } from "./site/alloc";
import { parseLinkTest } from "../src/fabric/nccl.render";

const AT = allocate(__filename);

const STANDIN = join(__dirname, "site", "shims", "nccl", "allreduce.js");

function rank(rank: number, env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [STANDIN], {
      env: { ...process.env, ...env, RANK: String(rank) },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    c.stdout.on("data", (d: Buffer) => (out += d.toString()));
    c.stderr.on("data", (d: Buffer) => (out += d.toString()));
    c.on("error", reject);
    c.on("close", (code) => resolve({ code, out }));
  });
}

const base = {
  MASTER_ADDR: "127.0.0.1",
  WORLD_SIZE: "2",
  NCCL_DEBUG: "INFO",
  NCCL_SOCKET_IFNAME: "lo",
  NCCL_IB_HCA: "rocep1s0f1:1",
  SM121_LINKTEST_TIMEOUT_S: "20",
};

// The tests wait on the stand-ins' own timeouts and use ports and node roots of their own: they run at once.
describe.concurrent("the NCCL stand-in", () => {
  it("meets its peer and prints a table sm121's parser reads, on sockets without RDMA devices", async ({ expect }) => {
    const env = { ...base, MASTER_PORT: String(AT.port(0)) };
    const [r0, r1] = await Promise.all([rank(0, env), rank(1, env)]);
    expect([r0.code, r1.code], r0.out + r1.out).toEqual([0, 0]);
    const out = parseLinkTest(`${r0.out}\n${r1.out}`);
    expect(out.transport).toEqual({ kind: "socket", name: "Socket", from: "channel" });
    expect(out.rows).toEqual([{ bytes: 8, busbw: 0, busbwInPlace: 0, algbw: 0, wrong: ["0", "0"] }]);
    expect(r0.out).toContain("NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>");
    expect(r1.out).not.toContain("# nThread");
  });

  it("fails a rank whose peer never comes, as torch's rendezvous does", async ({ expect }) => {
    const [alone, lost] = await Promise.all([
      rank(0, { ...base, MASTER_PORT: String(AT.port(1)), SM121_LINKTEST_TIMEOUT_S: "1" }),
      rank(1, { ...base, MASTER_PORT: String(AT.port(2)), SM121_LINKTEST_TIMEOUT_S: "1" }),
    ]);
    expect(alone.code).toBe(1);
    expect(alone.out).toContain(
      "torch.distributed.DistStoreError: Timed out after 1 seconds waiting for clients. 1/2 clients joined.",
    );
    expect(lost.code).toBe(1);
    expect(lost.out).toContain(
      "torch.distributed.DistNetworkError: The client socket has timed out after 1s " +
        `while trying to connect to (127.0.0.1, ${AT.port(2)}).`,
    );
  });
});

const roots: string[] = [];
afterAll(() => {
  for (const r of roots) rmSync(r, { recursive: true, force: true });
});

/** A node root as test/site/fabric.ts makes one: two active RoCE HCAs and one down; `devices`: their uverbs nodes. */
function node(devices: boolean): string {
  const root = mkdtempSync(join(tmpdir(), "sm121-nccl-node-"));
  roots.push(root);
  mkdirSync(join(root, "etc"));
  const hcas = [
    { name: "rocep1s0f0", netdev: "enp1s0f0np0", state: "DOWN", physical: "DISABLED" },
    { name: "rocep1s0f1", netdev: "enp1s0f1np1", state: "ACTIVE", physical: "LINK_UP" },
    { name: "roceP2p1s0f1", netdev: "enP2p1s0f1np1", state: "ACTIVE", physical: "LINK_UP" },
  ];
  writeFileSync(join(root, "etc", "fabric.json"), JSON.stringify({ interfaces: [], hcas }));
  if (devices) {
    mkdirSync(join(root, "dev", "infiniband"), { recursive: true });
    for (const i of [0, 1, 2])
      execFileSync("mknod", [join(root, "dev", "infiniband", `uverbs${i}`), "c", "231", String(192 + i)]);
  }
  return root;
}

// Character devices need mknod, which needs root (as the simulated site does).
const root = process.getuid?.() === 0;

describe.skipIf(!root).concurrent("the NCCL stand-in's choice of network, per rank from its own node", () => {
  // Two nodes with their devices and one without, made once: the stand-in only reads a node's root.
  let a = "";
  let b = "";
  let bare = "";
  beforeAll(() => {
    [a, b, bare] = [node(true), node(true), node(false)];
  });

  const pair = (port: number, env0: Record<string, string>, env1: Record<string, string>) =>
    Promise.all([
      rank(0, { ...base, MASTER_PORT: String(port), ...env0 }),
      rank(1, { ...base, MASTER_PORT: String(port), ...env1 }),
    ]);

  // First: it waits out torch's watchdog, the longest of the file's waits.
  it("a node without its uverbs devices is on sockets, and the pair never finishes, as NCCL hangs", async ({
    expect,
  }) => {
    const env = { NCCL_IB_HCA: "rocep1s0f1:1", SM121_LINKTEST_TIMEOUT_S: "3" };
    const [r0, r1] = await pair(AT.port(11), { ...env, SIM_NODE_ROOT: a }, { ...env, SIM_NODE_ROOT: bare });
    expect(r1.out).toContain("NCCL WARN NET/IB : Unable to open device rocep1s0f1");
    expect(r1.out).toContain("NCCL INFO NET/IB : No device found.");
    expect(r1.out).toContain("NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>");
    expect(r1.out).toContain("NCCL WARN socketFinalizeAccept: wrong type 4 != 3");
    expect(r0.out).toContain("NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE");
    // torch's watchdog ends both; no size was measured, and sm121 reads Socket (one rank is enough).
    expect([r0.code, r1.code]).toEqual([1, 1]);
    expect(r0.out).toContain("Watchdog caught collective operation timeout");
    const out = parseLinkTest(`${r0.out}\n${r1.out}`);
    expect(out.rows).toEqual([]);
    expect(out.transport).toEqual({ kind: "socket", name: "Socket", from: "network" });
  });

  it("uses IB on nodes whose HCAs NCCL_IB_HCA names and whose uverbs devices are there", async ({ expect }) => {
    const env = { NCCL_IB_HCA: "rocep1s0f1:1,roceP2p1s0f1:1" };
    const [r0, r1] = await pair(AT.port(3), { ...env, SIM_NODE_ROOT: a }, { ...env, SIM_NODE_ROOT: b });
    expect([r0.code, r1.code], r0.out + r1.out).toEqual([0, 0]);
    expect(r0.out).toContain(
      "NCCL INFO NET/IB : Using [0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE [RO]; OOB lo:127.0.0.1<0>",
    );
    const out = parseLinkTest(`${r0.out}\n${r1.out}`);
    expect(out.transport).toEqual({ kind: "ib", name: "IB", from: "channel" });
    expect(out.rows.map((r) => r.busbw)).toEqual([0.23, 0.52, 0.83, 0.96]);
  });

  const filters = "filters the HCAs as NCCL_IB_HCA does: prefixes, =exact, ^excluded, unset all; a down port never";
  it(filters, async ({ expect }) => {
    const cases: Array<[string | undefined, string]> = [
      [undefined, "[0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE"],
      ["roce", "[0]rocep1s0f1:1/RoCE [1]roceP2p1s0f1:1/RoCE"],
      ["^rocep1s0f1", "[0]roceP2p1s0f1:1/RoCE"],
      ["=roceP2p1s0f1", "[0]roceP2p1s0f1:1/RoCE"],
    ];
    // One port a pair: the seven pairs take ports 4-10, and run at once.
    const ib = cases.map(async ([hca, using], i) => {
      const env: Record<string, string> = { SIM_NODE_ROOT: a, ...(hca !== undefined && { NCCL_IB_HCA: hca }) };
      const envB: Record<string, string> = { ...env, SIM_NODE_ROOT: b };
      if (hca === undefined) {
        env["NCCL_IB_HCA"] = "";
        envB["NCCL_IB_HCA"] = "";
      }
      const [r0, r1] = await pair(AT.port(4 + i), env, envB);
      expect([r0.code, r1.code], `${hca}: ${r0.out}${r1.out}`).toEqual([0, 0]);
      expect(r0.out, String(hca)).toContain(`NCCL INFO NET/IB : Using ${using} [RO]`);
    });
    // An exact name that is only a prefix, a down port, or IB disabled: no device, sockets.
    const noIb: Array<Record<string, string>> = [
      { NCCL_IB_HCA: "=rocep1s0f" },
      { NCCL_IB_HCA: "rocep1s0f0:1" },
      { NCCL_IB_DISABLE: "1" },
    ];
    const sockets = noIb.map(async (env, i) => {
      const [r0, r1] = await pair(
        AT.port(4 + cases.length + i),
        { ...env, SIM_NODE_ROOT: a },
        { ...env, SIM_NODE_ROOT: b },
      );
      expect([r0.code, r1.code], r0.out + r1.out).toEqual([0, 0]);
      expect(parseLinkTest(`${r0.out}\n${r1.out}`).transport?.name, JSON.stringify(env)).toBe("Socket");
    });
    await Promise.all([...ib, ...sockets]);
  });
});

describe.concurrent("the nccl-tests and OpenMPI stand-ins", () => {
  const NCCL = join(__dirname, "site", "shims", "nccl");
  const run = (cmd: string, args: string[], env: Record<string, string> = {}) =>
    new Promise<{ code: number | null; out: string; err: string }>((resolve, reject) => {
      const c = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
      let out = "";
      let err = "";
      c.stdout.on("data", (d: Buffer) => (out += d.toString()));
      c.stderr.on("data", (d: Buffer) => (err += d.toString()));
      c.on("error", reject);
      c.on("close", (code) => resolve({ code, out, err }));
    });

  it("runs all_reduce_perf on two ranks through mpirun's rsh agent and prints nccl-tests' output", async ({
    expect,
  }) => {
    // An agent that runs the daemon's command here, as ssh to the other node would there.
    const dir = mkdtempSync(join(tmpdir(), "sm121-mpi-"));
    roots.push(dir);
    const agent = '#!/bin/sh\nh=$1; shift\nexport VLLM_HOST_IP=$h\nexec sh -c "$*"\n';
    writeFileSync(join(dir, "agent"), agent, { mode: 0o755 });
    const r = await run(
      join(NCCL, "mpirun"),
      [
        "--allow-run-as-root",
        "-np",
        "2",
        "-H",
        `localhost:1,${AT.host(0)}:1`,
        "--bind-to",
        "none",
        "--mca",
        "plm_rsh_agent",
        join(dir, "agent"),
        join(NCCL, "all_reduce_perf"),
        "-b",
        "8",
        "-e",
        "1G",
        "-f",
        "2",
        "-g",
        "1",
      ],
      { PATH: `${NCCL}:${process.env["PATH"] ?? ""}`, NCCL_DEBUG: "INFO", NCCL_SOCKET_IFNAME: "lo" },
    );
    expect(r.code, r.out + r.err).toBe(0);
    // nccl-tests' header (src/util.cu), as the real two-Spark run prints it.
    expect(r.out).toContain(
      "\n# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor) warmup iters: 1 iters: 20 " +
        "agg iters: 1 validation: 1 graph: 0 unalign: 0\n",
    );
    expect(r.out).toMatch(/^# {2}Rank {2}0 Group {2}0 Pid +\d+ on +\S+ device {2}0 \[000f:01:00\] NVIDIA GB10$/m);
    expect(r.out).toMatch(/^# {2}Rank {2}1 Group {2}0 Pid +\d+ on +\S+ device {2}0 \[000f:01:00\] NVIDIA GB10$/m);
    expect(r.out).toContain(
      "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n# Collective test concluded: all_reduce_perf\n",
    );
    // Both ranks' NCCL lines come out of mpirun; this machine has no RDMA devices: sockets.
    expect(r.out).toContain(`NCCL INFO NET/Socket : Using [0]lo:${AT.host(0)}<0>`);
    const out = parseLinkTest(r.out);
    expect(out.rows).toEqual([{ bytes: 8, busbw: 0, busbwInPlace: 0, algbw: 0, wrong: ["0", "0"] }]);
    expect(out.avgBusBandwidth).toBe(0);
    expect(out.transport?.name).toBe("Socket");
  });

  it("refuses what the real ones refuse", async ({ expect }) => {
    const bad = await run(join(NCCL, "all_reduce_perf"), ["--bogus"]);
    expect(bad.err).toContain("all_reduce_perf: unrecognized option '--bogus'");
    expect(bad.out).toContain("USAGE: all_reduce_perf");
    const mpi = await run(join(NCCL, "mpirun"), ["--bogus", "x"]);
    expect(mpi.code).toBe(1);
    expect(mpi.err).toContain('mpirun: Error: unknown option "--bogus"');
    if (process.getuid?.() === 0) {
      const root = await run(join(NCCL, "mpirun"), ["-np", "1", "true"]);
      expect(root.code).toBe(1);
      expect(root.err).toContain("mpirun has detected an attempt to run as root.");
    }
  });
});
