/**
 * The read-only scripts `sm121 status` runs on a node (./status): a deployment's state, files, .env
 * and KV cache line; the node's memory facts; the operator's GPU probe.
 */
import type { DeploymentBundle, NodeBundle } from "../render/types";
import { envPathOf, watchedPaths } from "../serve/probe";
import { preflightScript } from "../serve/steps";
import { readyFileScript } from "../serve/phases";
import { nodePath, quote } from "../text/shell";
import { printRecord } from "../protocol";

/**
 * The state, files, .env and KV cache of one deployment on one node: one read-only script, the
 * serve's own probe (serve/steps.ts) plus the KV cache line. The status script is left out when
 * it would send an HTTP request that is not allowed.
 */
export function probeScript(b: DeploymentBundle, nb: NodeBundle, httpAllowed: boolean): string {
  // A status script that asks the engine's API (DGPP's) is an HTTP request too.
  const runStatus = httpAllowed || !nb.statusAsksApi;
  const lines = [preflightScript(nb, watchedPaths(nb), envPathOf(nb), { checks: false, runStatus, clients: false })];
  if (b.readiness.kvCachePattern !== undefined && nb.runs && nb.logs !== ":") {
    lines.push(
      "kv=$( ( SM121_LINES=100000; SM121_FOLLOW=0; export SM121_LINES SM121_FOLLOW; " +
        `${nb.logs} ) 2>&1 | grep -E ${quote(b.readiness.kvCachePattern)} | tail -n 1 || true)`,
      printRecord(
        "kvLog",
        '"log64":"%s","saved64":"%s"',
        `"$(printf '%s' "$kv" | base64 -w0)" ` +
          `"$(base64 -w0 < ${nodePath(nb.stateDir)}/kv-cache.txt 2>/dev/null || true)"`,
      ),
    );
  }
  // Where the last start's time to ready went, as the up left it on the node.
  if (nb.api !== undefined) lines.push(readyFileScript(nb.stateDir));
  return lines.join("\n");
}

/** MemAvailable, the watermark factor and nvidia-smi's compute apps of a node. */
export function factsScript(): string {
  return [
    "mem=$(awk '/^MemAvailable:/ {print $2}' /proc/meminfo 2>/dev/null || true)",
    "wsf=$(sysctl -n vm.watermark_scale_factor 2>/dev/null || true)",
    "apps=$(nvidia-smi --query-compute-apps=pid,process_name,used_memory " +
      "--format=csv,noheader,nounits 2>/dev/null); rc=$?",
    printRecord(
      "nodeMemory",
      '"memKiB":%s,"wsf":"%s","apps64":"%s","appsRc":%d',
      `"\${mem:-null}" "$wsf" "$(printf '%s' "$apps" | base64 -w0)" "$rc"`,
    ),
  ].join("\n");
}

/** A node's own GPU probe (`--gpu-probe`), its output and exit code as a record. */
export function gpuProbeScript(probe: string): string {
  return [
    "out=$(mktemp); trap 'rm -f \"$out\"' EXIT",
    `bash -c ${quote(probe)} > "$out" 2>&1 < /dev/null; code=$?`,
    printRecord("probeOutput", '"code":%d,"out64":"%s"', `"$code" "$(tail -c 4000 "$out" | base64 -w0)"`),
  ].join("\n");
}
