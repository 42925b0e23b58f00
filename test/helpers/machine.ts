/** This machine's facts that every simulated node shares, as doctor's wedge checks read them. */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";

/** Whether this machine has swap on, and whether a user-space OOM killer runs on it. */
export function machineWedgeFacts(): { swap: boolean; oomKiller: boolean } {
  const swap = readFileSync("/proc/swaps", "utf8").trim().split("\n").length > 1;
  const oomKiller = ["earlyoom", "systemd-oomd", "nohang"].some((p) => spawnSync("pgrep", ["-x", p]).status === 0);
  return { swap, oomKiller };
}
