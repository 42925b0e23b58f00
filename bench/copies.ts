/**
 * `copies`: the bytes that leave the source of a model copy for 1, 3 and 7 peers, counted on the
 * source node (the chain's sendScript counts its stream with wc). Target: 1.0x the payload for
 * every N, where one stream per peer sent N x. Eight nodes on 127.0.0.130-137, sshd port 2330.
 */
import { readFileSync } from "node:fs";
import type { SshAuth } from "../src/remote/ssh";
import { syncModel, type CacheNode } from "../src/serve/modelcache";
import { sshOk } from "../test/site/exec";
import { startSite, type SimSite } from "../test/site/site";
import { endSite } from "../test/helpers/project";
import { COPIES_SITE } from "./lib/sites";
import { say } from "./lib/util";

export interface CopyRow {
  peers: number;
  payloadBytes: number;
  sentFromSource: number;
  ratio: number;
}

const REPO = "sm121-test/tiny-qwen3";

export async function measureCopies(): Promise<CopyRow[]> {
  const dir = COPIES_SITE;
  say("copies: starting 8 nodes (127.0.0.130-137:2330)");
  const site: SimSite = await startSite({
    dir,
    nodes: ["c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7"],
    firstIp: 130,
    sshPort: 2330,
  });
  try {
    const auth: SshAuth = {
      knownHosts: site.knownHosts,
      hostKeys: "strict",
      privateKey: readFileSync(site.clientKey, "utf8"),
      dialAttempts: 1,
    };
    const nodes: CacheNode[] = site.nodes.map((n) => ({
      node: n.name,
      conn: { kind: "ssh", host: n.ip, port: n.sshPort, user: site.user },
      ip: n.ip,
      stateDir: "~/.sm121",
      hfHome: `${n.home}/.cache/huggingface`,
    }));
    const rows: CopyRow[] = [];
    for (const peers of [1, 3, 7]) {
      // Every peer starts empty; the source downloads once (first round) and keeps its copy.
      for (const n of site.nodes.slice(1)) await sshOk(site, n, "rm -rf ~/.cache/huggingface");
      const out = await syncModel(
        { deployment: "bench", repo: REPO, revision: "main", nodes: nodes.slice(0, peers + 1) },
        undefined,
        auth,
        () => undefined,
      );
      const sent = out.sentFromSource ?? Number.NaN;
      rows.push({
        peers,
        payloadBytes: out.bytes,
        sentFromSource: sent,
        ratio: Math.round((sent / out.bytes) * 1000) / 1000,
      });
      say(
        `copies: ${peers} peer(s): ${sent} bytes left the source for a ${out.bytes}-byte payload ` +
          `(${(sent / out.bytes).toFixed(3)}x)`,
      );
    }
    return rows;
  } finally {
    await endSite(site);
  }
}
