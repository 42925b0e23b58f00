/**
 * The link test's parser on real output of nccl-tests and of NCCL_DEBUG=INFO, taken from public
 * sources (test/fixtures/fabric/README.md says where each came from), and its judgement.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { judgeLinkTest, largestRow, parseLinkTest, sizeText } from "../src/fabric/nccl.render";

const fx = (f: string) => readFileSync(join(__dirname, "fixtures", "fabric", f), "utf8");

describe("parseLinkTest on real output", () => {
  it("reads the table of a two-Spark all_reduce_perf run (GB10, RoCE)", () => {
    const out = parseLinkTest(fx("nccl-tests-gb10-roce.txt"));
    expect(out.rows.map((r) => [r.bytes, r.algbw, r.busbw, r.busbwInPlace])).toEqual([
      [8192, 0.23, 0.23, 0.27],
      [16384, 0.52, 0.52, 0.53],
      [32768, 0.83, 0.83, 0.88],
      [65536, 0.96, 0.96, 1.01],
    ]);
    expect(out.rows.every((r) => r.wrong[0] === "0" && r.wrong[1] === "0")).toBe(true);
    expect(largestRow(out)?.bytes).toBe(65536);
    expect(out.transport).toBeUndefined();
  });

  it("reads NET/IB over RoCE from the INFO lines, with the ports NCCL lists", () => {
    const out = parseLinkTest(fx("nccl-info-ib-roce.txt"));
    expect(out.transport).toEqual({ kind: "ib", name: "IB", from: "network" });
    expect(out.devices).toEqual(["mlx5_6:1/RoCE"]);
    expect(out.ncclVersion).toBe("2.10.3+cuda11.0");
    expect(out.rows).toEqual([]);
  });

  it("reads the channels' NET/IBext transport of a Spark's engine log, behind vLLM's prefixes", () => {
    const out = parseLinkTest(fx("nccl-info-spark-ibext.txt"));
    expect(out.transport).toEqual({ kind: "ib", name: "IBext_v10", from: "channel" });
  });

  it("reads NET/Socket, and the interfaces NCCL lists", () => {
    const out = parseLinkTest(fx("nccl-socket-t4.txt"));
    expect(out.transport).toEqual({ kind: "socket", name: "Socket", from: "network" });
    expect(out.devices).toEqual(["em1:10.193.84.3<0>", "tunl0:10.227.47.12<0>"]);
  });

  it("reads the older table without a redop column and with an error column", () => {
    const out = parseLinkTest(fx("nccl-tests-socket-broadcast.txt"));
    expect(out.rows).toEqual([{ bytes: 8, busbw: 0, busbwInPlace: 0, algbw: 0, wrong: ["N/A", "N/A"] }]);
  });

  it("reads the largest sizes and the summary line", () => {
    const out = parseLinkTest(fx("nccl-tests-tail-avg.txt"));
    expect(out.avgBusBandwidth).toBe(142.652);
    expect(largestRow(out)).toMatchObject({ bytes: 17179869184, busbw: 360.98 });
    expect(sizeText(17179869184)).toBe("16G");
  });
});

describe("judgeLinkTest", () => {
  const table = fx("nccl-tests-gb10-roce.txt");
  it("passes the GB10 table with NET/IB on an RDMA fabric and a minimum under its busbw", () => {
    const out = parseLinkTest(table + fx("nccl-info-ib-roce.txt"));
    expect(judgeLinkTest(out, { rdma: true, minBusBandwidthGBps: 0.9 })).toEqual([]);
  });

  it("fails NET/Socket on a fabric declared RDMA, and a busbw under the minimum, with the numbers", () => {
    const out = parseLinkTest(table + fx("nccl-socket-t4.txt"));
    expect(judgeLinkTest(out, { rdma: true, minBusBandwidthGBps: 10 })).toEqual([
      { kind: "socket-on-rdma", transport: { kind: "socket", name: "Socket", from: "network" } },
      { kind: "below-minimum", bytes: 65536, busbw: 0.96, minimum: 10 },
    ]);
    expect(judgeLinkTest(out, { rdma: false })).toEqual([]);
  });

  it("fails a run whose NCCL named no network on an RDMA fabric, and a run without a table", () => {
    expect(judgeLinkTest(parseLinkTest(table), { rdma: true })).toEqual([{ kind: "no-transport" }]);
    expect(judgeLinkTest(parseLinkTest(fx("nccl-info-ib-roce.txt")), { rdma: true })).toEqual([{ kind: "no-result" }]);
    // A pair that never finished still names its network: a rank on sockets fails RDMA, no table or not.
    expect(judgeLinkTest(parseLinkTest(fx("nccl-socket-t4.txt")), { rdma: true })).toEqual([
      { kind: "no-result" },
      { kind: "socket-on-rdma", transport: { kind: "socket", name: "Socket", from: "network" } },
    ]);
  });

  it("fails wrong results", () => {
    const bad = table.replace(/(0\.96\s+)0(\s)/, "$13$2");
    expect(judgeLinkTest(parseLinkTest(bad), { rdma: false })).toEqual([
      { kind: "wrong", bytes: 65536, wrong: ["3", "0"] },
    ]);
  });
});
