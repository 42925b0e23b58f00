/**
 * doctor's checks of what makes a Spark wedge under memory pressure, or not come back from it: on a
 * GB10 the GPU and the host share one memory, and a load that outgrows it takes SSH with it.
 * - swap: the host pages instead of ending the engine, and stalls for minutes;
 * - no user-space OOM killer (earlyoom, systemd-oomd, nohang): the kernel's acts only after the
 *   host has stalled;
 * - /dev/shm: the host's (sm121's containers run with --ipc host), and that of each engine
 *   container that runs with its own IPC (Docker's default is 64 MiB: PyTorch's workers and NCCL
 *   end with a bus error under load);
 * - vm.watermark_scale_factor above the kernel's 10: MemAvailable is smaller for the same free
 *   memory, which the memory gate and the tripwire's floor read (seed 001: 300 cost about 3 GiB).
 * Each is a warning with what to do: the node can serve, it is less likely to survive a bad load.
 */
import { recordsOf, printRecord, type NodeRecord } from "../protocol";
import type { NodeBundle } from "../render/types";
import { t } from "../text/messages";
import { quote } from "../text/shell";
import type { DoctorCheck } from "./doctorschema";

/** Below this a /dev/shm is too small for an engine's workers (Docker's default is 64 MiB). */
const SHM_MIN_KIB = 1024 * 1024;
/** The kernel's default vm.watermark_scale_factor. */
const WSF_DEFAULT = 10;
const OOM_KILLERS = ["earlyoom", "systemd-oomd", "nohang"];

/** The node's facts for the checks: swap, a running OOM killer, /dev/shm, each engine container's IPC. */
export function wedgeScript(placed: ReadonlyArray<{ nb: NodeBundle }>): string {
  const containers = [
    ...new Set(placed.flatMap(({ nb }) => (nb.containerName === undefined ? [] : [nb.containerName]))),
  ];
  const shm = (c: string) =>
    printRecord("wedgeShm", '"container":"%s","ipc":"%s","shmBytes":%d', `${quote(c)} "\${v%% *}" "\${v##* }"`);
  const inspect = containers.map(
    (c) =>
      `if v=$(docker inspect -f '{{.HostConfig.IpcMode}} {{.HostConfig.ShmSize}}' ${quote(c)} 2>/dev/null); then ` +
      `${shm(c)}; fi`,
  );
  return [
    "swap=$(awk 'NR > 1 {s += $3} END {print s + 0}' /proc/swaps 2>/dev/null || echo 0)",
    `oom=; for p in ${OOM_KILLERS.join(" ")}; do if pgrep -x "$p" >/dev/null 2>&1; then oom=$p; break; fi; done`,
    "shm=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $2}')",
    printRecord("wedge", '"swapKiB":%d,"oomKiller":"%s","shmKiB":%d', '"${swap:-0}" "$oom" "${shm:-0}"'),
    ...inspect,
  ].join("\n");
}

export interface WedgeContext {
  node: string;
  /** The memory gate and the tripwire's floor of the node, which read MemAvailable. */
  gateGiB: number;
  floorGiB: number;
  /** vm.watermark_scale_factor as the node said it ("" when unknown). */
  wsf: string;
  /** Whether a deployment here runs in a container of sm121's docker target (--ipc host). */
  hostIpc: boolean;
  deployments: string[];
}

const gib = (kib: number) => Math.round((kib / 1048576) * 10) / 10;

/** The checks from the node's records; none when the node printed no facts. */
export function wedgeChecks(records: readonly NodeRecord[], c: WedgeContext): DoctorCheck[] {
  const facts = recordsOf(records, "wedge")[0];
  if (facts === undefined) return [];
  const check = (subject: string, ok: boolean, detail: string, hint: string): DoctorCheck => ({
    check: "wedge",
    subject,
    ok,
    severity: "warning",
    detail,
    hint: ok ? null : hint,
    deployments: c.deployments,
  });
  const out = [
    check(
      "swap",
      facts.swapKiB === 0,
      facts.swapKiB === 0 ? t("doctor.wedge.noSwap") : t("doctor.wedge.swap", { gib: gib(facts.swapKiB) }),
      t("doctor.wedge.swapHint", { node: c.node }),
    ),
    check(
      "oom-killer",
      facts.oomKiller !== "",
      facts.oomKiller !== "" ? t("doctor.wedge.oomRuns", { name: facts.oomKiller }) : t("doctor.wedge.noOom"),
      t("doctor.wedge.oomHint"),
    ),
  ];
  if (c.hostIpc) {
    const ok = facts.shmKiB >= SHM_MIN_KIB;
    out.push(check("/dev/shm", ok, t("doctor.wedge.shm", { gib: gib(facts.shmKiB) }), t("doctor.wedge.shmHint")));
  }
  for (const s of recordsOf(records, "wedgeShm").filter((r) => r.ipc !== "host")) {
    const ok = s.shmBytes >= SHM_MIN_KIB * 1024;
    const detail = t("doctor.wedge.containerShm", { container: s.container, mib: Math.round(s.shmBytes / 1048576) });
    out.push(check(`/dev/shm of ${s.container}`, ok, detail, t("doctor.wedge.containerShmHint")));
  }
  const wsf = Number(c.wsf);
  if (c.wsf !== "" && Number.isFinite(wsf)) {
    const ok = wsf <= WSF_DEFAULT;
    const detail = t("doctor.wedge.wsf", { wsf, dflt: WSF_DEFAULT });
    const hint = t("doctor.wedge.wsfHint", { gate: c.gateGiB, floor: c.floorGiB, dflt: WSF_DEFAULT });
    out.push(check("vm.watermark_scale_factor", ok, detail, hint));
  }
  return out;
}
