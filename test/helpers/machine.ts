/** This machine's facts that every simulated node shares: its memory, and what doctor's wedge checks read. */
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import { createInterface } from "node:readline";
import { readFileSync } from "node:fs";

/** Whether this machine has swap on, and whether a user-space OOM killer runs on it. */
export function machineWedgeFacts(): { swap: boolean; oomKiller: boolean } {
  const swap = readFileSync("/proc/swaps", "utf8").trim().split("\n").length > 1;
  const oomKiller = ["earlyoom", "systemd-oomd", "nohang"].some((p) => spawnSync("pgrep", ["-x", p]).status === 0);
  return { swap, oomKiller };
}

export const KIB_PER_GIB = 1024 * 1024;

/** MemAvailable of this machine (every simulated node's), in KiB. */
export function memAvailableKiB(): number {
  const m = /^MemAvailable:\s+(\d+) kB$/m.exec(readFileSync("/proc/meminfo", "utf8"));
  if (m === null) throw new Error("/proc/meminfo has no MemAvailable");
  return Number(m[1]);
}

/**
 * A load that takes memory in 64 MiB pages it writes to, until MemAvailable is `belowKiB` under
 * `floorKiB`, then holds it. Resolves with the moment it crossed the floor (ms since the epoch).
 */
export function load(floorKiB: number, belowKiB: number): { crossed: Promise<number>; end: () => void } {
  const py = [
    "import sys, time",
    "def avail():",
    "    for l in open('/proc/meminfo'):",
    "        if l.startswith('MemAvailable:'): return int(l.split()[1])",
    "held = []; crossed = None",
    `floor, target = ${floorKiB}, ${floorKiB - belowKiB}`,
    "while True:",
    "    a = avail()",
    "    if crossed is None and a < floor: crossed = int(time.time() * 1000)",
    "    if a < target:",
    "        print(crossed, flush=True)",
    "        break",
    "    held.append(b'\\x01' * (64 << 20))",
    "sys.stdin.read()",
  ].join("\n");
  const child: ChildProcess = spawn("python3", ["-c", py], { stdio: ["pipe", "pipe", "inherit"] });
  const crossed = new Promise<number>((resolve, reject) => {
    child.on("exit", (code) => reject(new Error(`the memory load ended (${code}) before it crossed the floor`)));
    createInterface({ input: child.stdout! }).once("line", (l) => resolve(Number(l)));
  });
  return { crossed, end: () => child.kill("SIGKILL") };
}
