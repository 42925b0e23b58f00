/**
 * The simulated site's NCCL stand-in (test/site/shims/nccl/allreduce.js) on its own: two ranks
 * meet over TCP and rank 0 prints nccl-tests' table, which sm121's parser reads as it reads the
 * real runs; a rank whose peer never comes fails as torch's rendezvous does; without the RDMA
 * devices (this machine has none) NCCL is on sockets.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseLinkTest } from "../src/serve/linktest";

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

describe("the NCCL stand-in", () => {
  it("meets its peer and prints a table sm121's parser reads, on sockets without RDMA devices", async () => {
    const env = { ...base, MASTER_PORT: "29611" };
    const [r0, r1] = await Promise.all([rank(0, env), rank(1, env)]);
    expect([r0.code, r1.code], r0.out + r1.out).toEqual([0, 0]);
    const out = parseLinkTest(`${r0.out}\n${r1.out}`);
    expect(out.transport).toEqual({ kind: "socket", name: "Socket", from: "channel" });
    expect(out.rows).toEqual([{ bytes: 8, busbw: 0, busbwInPlace: 0, algbw: 0, wrong: ["0", "0"] }]);
    expect(r0.out).toContain("NCCL INFO NET/Socket : Using [0]lo:127.0.0.1<0>");
    expect(r1.out).not.toContain("# nThread");
  });

  it("fails a rank whose peer never comes, as torch's rendezvous does", async () => {
    const alone = await rank(0, { ...base, MASTER_PORT: "29612", SM121_LINKTEST_TIMEOUT_S: "1" });
    expect(alone.code).toBe(1);
    expect(alone.out).toContain(
      "torch.distributed.DistStoreError: Timed out after 1 seconds waiting for clients. 1/2 clients joined.",
    );
    const lost = await rank(1, { ...base, MASTER_PORT: "29613", SM121_LINKTEST_TIMEOUT_S: "1" });
    expect(lost.code).toBe(1);
    expect(lost.out).toContain(
      "torch.distributed.DistNetworkError: The client socket has timed out after 1s " +
        "while trying to connect to (127.0.0.1, 29613).",
    );
  });
});
