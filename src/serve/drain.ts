/**
 * The drain of a replica before it stops in a roll: its gateway entries are disabled already, so
 * the requests it still runs are the last it gets from a gateway that reads its file again. They
 * finish before the stop (vLLM and SGLang abort whatever runs when they stop), bounded by
 * sm121:drainS: the engine's gauge of running requests (its driver's, render/replicas drainOf),
 * read on the API node over one connection until it is 0.
 */
import { t } from "../text/messages";
import { quote } from "../text/shell";
import { withHosts, type SshAuth } from "../remote";
import type { Drain } from "../render/replicas";
import type { DeploymentBundle } from "../render/types";
import { firstRecord, printRecord, type NodeRecord } from "../protocol";
import { parseExposition, seriesSum } from "../engines/exposition";

/**
 * One read of the gauge: an `inflight` record with /metrics' lines that name it, as the engine
 * wrote them (base64), read here as Prometheus reads them; null when /metrics does not answer.
 */
export function inflightScript(url: string, series: string): string {
  const none = printRecord("inflight", '"metrics64":null');
  return [
    `out=$(curl -sf --max-time 3 ${quote(url)} 2>/dev/null) || { ${none}; exit 0; }`,
    `m=$(printf '%s\\n' "$out" | { grep -F -e ${quote(series)} || true; } | base64 -w0)`,
    printRecord("inflight", '"metrics64":"%s"', '"$m"'),
  ].join("\n");
}

/** The gauge a read found; undefined when the engine exports none or its value is no finite number. */
export function inflightOf(records: readonly NodeRecord[], series: string): number | undefined {
  const m = firstRecord(records, "inflight")?.metrics64;
  if (m === null || m === undefined) return undefined;
  const n = seriesSum(parseExposition(Buffer.from(m, "base64").toString("utf8")), series);
  return typeof n === "number" ? n : undefined;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Waits until the engine of `b` runs no request, or `d.boundS` has passed; says what it waits for.
 * Returns how many still ran when it stopped waiting (0: drained; undefined: nothing to read).
 */
export async function drainEngine(
  b: Pick<DeploymentBundle, "nodes">,
  auth: SshAuth,
  d: Drain,
  log: (m: string) => void,
): Promise<number | undefined> {
  const nb = b.nodes.find((n) => n.api !== undefined);
  if (nb?.api === undefined) return undefined;
  const url = `http://${nb.api.host}:${nb.api.port}${d.path}`;
  const script = inflightScript(url, d.running);
  return withHosts([nb], auth, async (hosts) => {
    const host = hosts.get(nb.node);
    if (host === undefined) return undefined;
    const t0 = Date.now();
    let said = -1;
    let saidAt = 0;
    for (;;) {
      const n = inflightOf((await host.run(script, { step: "drain", timeoutMs: 15_000 })).records, d.running);
      const waited = Math.round((Date.now() - t0) / 1000);
      if (n === undefined) {
        log(t("serve.drainNoAnswer", { url, metric: d.running }));
        return undefined;
      }
      // Said even at the first reading: the up's output shows that it drained.
      if (n === 0) {
        log(t("serve.drained", { seconds: waited }));
        return 0;
      }
      if (Date.now() - t0 >= d.boundS * 1000) {
        log(t("serve.drainGivesUp", { count: n, seconds: d.boundS }));
        return n;
      }
      // A line when the count changes, and one every 10 s while it stands.
      if (n !== said || Date.now() - saidAt >= 10_000) {
        log(t("serve.drainWaits", { count: n, waited, seconds: d.boundS }));
        saidAt = Date.now();
      }
      said = n;
      await pause(500);
    }
  });
}
