/**
 * What the memory fit needs from a node, read in the same round trip as the node's state (the
 * plan-time look, the up's preflight, doctor): its MemTotal (from `free`, which a DGX Spark's
 * unified memory reports whole) and, from the HF cache where the engine finds the checkpoint,
 * the snapshot's config.json and the safetensors index's metadata.total_size (or the size of a
 * single model.safetensors). The index's weight map can be megabytes: only the size is read.
 *
 * `hub`: where the cache has no checkpoint, the same two files from the hub, by curl on this node
 * (`$HF_ENDPOINT`, else https://huggingface.co; a few KB): the look and doctor ask it of one node
 * of each deployment (rank 0), before the first up has downloaded anything. No token is sent: a
 * gated model stays unknown until its first up.
 */
import type { NodeModelFacts } from "../render/memfit";
import type { NodeBundle } from "../render/types";
import { nodePath, quote } from "../text/shell";
import { printRecord, type NodeRecord } from "../protocol";

/** Shell lines printing a `memTotal` record and, when a cache has the checkpoint, a `modelConfig` record. */
export function modelFactsScript(nb: NodeBundle, hub = false): string {
  const checks = nb.preflight.filter((c) => c.kind === "hf-cache");
  const caches = checks.map((c) => nodePath(c.subject));
  const lines = [
    // free's "Mem:" row, second field, read by bash itself (no awk: the look runs at every plan).
    "mt=; if command -v free >/dev/null; then mt=$(free -b) || mt=; fi; " +
      "if [[ $mt =~ Mem:[[:space:]]+([0-9]+) ]]; then mt=${BASH_REMATCH[1]}; else mt=; fi",
    printRecord("memTotal", '"bytes":%s', '"${mt:-null}"'),
  ];
  if (caches.length === 0) return lines.join("\n");
  return [
    ...lines,
    `for c in ${caches.join(" ")}; do`,
    // The revision the hub resolved (refs/main), else the newest snapshot (as `ls -t` orders
    // them: ties by name), by bash's own -nt: no process when the checkpoint is not cached.
    '  rev=; if [ -f "$c/refs/main" ]; then IFS= read -r rev < "$c/refs/main" || true; fi',
    '  if [ -z "$rev" ]; then for d in "$c"/snapshots/*/; do [ -d "$d" ] || continue; ' +
      'if [ -z "$rev" ] || [ "$d" -nt "$c/snapshots/$rev" ]; then rev=${d%/}; rev=${rev##*/}; fi; done; fi',
    '  s="$c/snapshots/$rev"',
    '  if [ -n "$rev" ] && [ -f "$s/config.json" ]; then',
    `    size=$(grep -o '"total_size"[[:space:]]*:[[:space:]]*[0-9]*' "$s/model.safetensors.index.json" 2>/dev/null ` +
      `| head -n 1 | grep -o '[0-9]*$' || true)`,
    '    if [ -z "$size" ] && [ -f "$s/model.safetensors" ]; then size=$(stat -L -c %s "$s/model.safetensors"); fi',
    `    ${printRecord(
      "modelConfig",
      '"config64":"%s","weightsBytes":%s',
      '"$(head -c 262144 "$s/config.json" | base64 -w0)" "${size:-null}"',
    )}`,
    // `mf`: the cache had it, so the hub is not asked (only where it would be).
    hub ? "    mf=1; break" : "    break",
    "  fi",
    "done",
    ...(hub ? hubLines(checks[0]?.model) : []),
  ].join("\n");
}

/** The checkpoint's config.json and safetensors size from the hub, when no cache had them (`mf` unset). */
function hubLines(model: { repo: string; revision: string } | undefined): string[] {
  if (model === undefined) return [];
  const path = `/${model.repo}/resolve/${encodeURIComponent(model.revision)}`;
  const get = "curl -sfL --connect-timeout 3 --max-time 15 --max-filesize 67108864";
  return [
    'if [ -z "${mf:-}" ]; then',
    `  base="\${HF_ENDPOINT:-https://huggingface.co}"${quote(path)}`,
    `  cfg=$(${get} "$base/config.json" 2>/dev/null | base64 -w0) || cfg=`,
    '  if [ -n "$cfg" ]; then',
    "    ix=$(mktemp); size=",
    `    if ${get} -o "$ix" "$base/model.safetensors.index.json" 2>/dev/null; then`,
    `      size=$(grep -o '"total_size"[[:space:]]*:[[:space:]]*[0-9]*' "$ix" | head -n 1 | ` +
      "grep -o '[0-9]*$') || size=",
    "    else",
    // One file: its size, as the hub's headers give it (X-Linked-Size for a file in LFS).
    `      size=$(${get} -I "$base/model.safetensors" 2>/dev/null | tr -d '\\r' | ` +
      `awk 'tolower($1) == "x-linked-size:" {l = $2} tolower($1) == "content-length:" {c = $2} ` +
      `END {print (l != "" ? l : c)}') || size=`,
    "    fi",
    '    rm -f "$ix"',
    `    ${printRecord("modelHub", '"config64":"%s","weightsBytes":%s', '"$cfg" "${size:-null}"')}`,
    "  fi",
    "fi",
  ];
}

/** Adds one record of modelFactsScript to `facts`; false when the record is none of its. */
export function addModelFact(facts: NodeModelFacts, r: NodeRecord): boolean {
  if (r.kind === "memTotal") {
    if (r.bytes !== null && r.bytes > 0) facts.memTotalBytes = r.bytes;
    return true;
  }
  if (r.kind !== "modelConfig" && r.kind !== "modelHub") return false;
  if (r.kind === "modelHub") facts.fromHub = true;
  try {
    const config: unknown = JSON.parse(Buffer.from(r.config64, "base64").toString("utf8"));
    if (typeof config === "object" && config !== null && !Array.isArray(config))
      facts.config = config as Record<string, unknown>;
  } catch {
    // A config.json that is not JSON tells the fit nothing; the engine will say more at its start.
  }
  if (r.weightsBytes !== null && r.weightsBytes > 0) facts.weightsBytes = r.weightsBytes;
  return true;
}
