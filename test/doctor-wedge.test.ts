/**
 * doctor's checks of what makes a node wedge (src/cli/doctorwedge.ts): the script's facts as this
 * machine's bash prints them, and the verdicts, each a warning with what to do.
 */
import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { wedgeChecks, wedgeScript, type WedgeContext } from "../src/cli/doctorwedge";
import { recordOfLine, type NodeRecord } from "../src/protocol";

const ctx: WedgeContext = { node: "spark1", gateGiB: 100, floorGiB: 8, wsf: "10", hostIpc: true, deployments: ["a"] };
const facts = (swapKiB: number, oomKiller: string, shmKiB: number): NodeRecord[] => [
  { kind: "wedge", swapKiB, oomKiller, shmKiB },
];
const bySubject = (records: NodeRecord[], c: WedgeContext = ctx) =>
  Object.fromEntries(wedgeChecks(records, c).map((k) => [k.subject, k]));

describe("doctor: what makes a node wedge", () => {
  it("reads swap, an OOM killer and /dev/shm with this machine's bash, awk, pgrep and df", () => {
    const r = spawnSync("bash", ["-c", wedgeScript([])], { encoding: "utf8" });
    expect(r.status, r.stderr).toBe(0);
    const records = r.stdout.split("\n").flatMap((l) => recordOfLine(l) ?? []);
    const swaps = spawnSync("awk", ["NR > 1 {s += $3} END {print s + 0}", "/proc/swaps"], { encoding: "utf8" });
    expect(records.map((x) => x.kind)).toEqual(["wedge"]);
    const w = records[0] as { swapKiB: number; oomKiller: string; shmKiB: number };
    expect(w.swapKiB).toBe(Number(swaps.stdout.trim()));
    expect(["", "earlyoom", "systemd-oomd", "nohang"]).toContain(w.oomKiller);
    expect(w.shmKiB).toBeGreaterThan(0);
  });

  it("passes a node with no swap, an OOM killer, a large /dev/shm and the kernel's watermark factor", () => {
    const checks = wedgeChecks(facts(0, "earlyoom", 60 * 1024 * 1024), ctx);
    expect(checks.map((c) => [c.subject, c.ok])).toEqual([
      ["swap", true],
      ["oom-killer", true],
      ["/dev/shm", true],
      ["vm.watermark_scale_factor", true],
    ]);
    expect(checks.every((c) => c.severity === "warning" && c.hint === null)).toBe(true);
  });

  it("warns of swap, no OOM killer, a small /dev/shm and a high watermark factor, each with what to do", () => {
    const c = bySubject(facts(8 * 1024 * 1024, "", 64 * 1024), { ...ctx, wsf: "300" });
    expect(c["swap"]).toMatchObject({ ok: false, detail: "swap on: 8 GiB" });
    expect(c["swap"]?.hint).toContain("sudo swapoff -a");
    expect(c["oom-killer"]).toMatchObject({ ok: false, detail: "no earlyoom, systemd-oomd or nohang runs" });
    expect(c["oom-killer"]?.hint).toContain("sudo apt install earlyoom");
    expect(c["/dev/shm"]?.ok).toBe(false);
    expect(c["/dev/shm"]?.detail).toContain("0.1 GiB");
    expect(c["vm.watermark_scale_factor"]).toMatchObject({ ok: false, detail: "300 (the kernel's default is 10)" });
    expect(c["vm.watermark_scale_factor"]?.hint).toContain("memory gate (100 GiB) and the tripwire's floor (8 GiB)");
  });

  it("checks the /dev/shm of an engine container with its own IPC, not one that shares the host's", () => {
    const records: NodeRecord[] = [
      ...facts(0, "systemd-oomd", 60 * 1024 * 1024),
      { kind: "wedgeShm", container: "flash", ipc: "private", shmBytes: 64 * 1024 * 1024 },
      { kind: "wedgeShm", container: "big", ipc: "shareable", shmBytes: 16 * 1024 ** 3 },
      { kind: "wedgeShm", container: "sm121-a-0", ipc: "host", shmBytes: 64 * 1024 * 1024 },
    ];
    const c = bySubject(records, { ...ctx, hostIpc: false });
    expect(c["/dev/shm"]).toBeUndefined();
    expect(c["/dev/shm of flash"]).toMatchObject({ ok: false, detail: "flash runs with its own /dev/shm of 64 MiB" });
    expect(c["/dev/shm of flash"]?.hint).toContain("--ipc host");
    expect(c["/dev/shm of big"]?.ok).toBe(true);
    expect(c["/dev/shm of sm121-a-0"]).toBeUndefined();
  });

  it("says nothing of the watermark factor it could not read, and nothing at all without the node's facts", () => {
    expect(bySubject(facts(0, "", 1), { ...ctx, wsf: "" })["vm.watermark_scale_factor"]).toBeUndefined();
    expect(wedgeChecks([], ctx)).toEqual([]);
  });
});
