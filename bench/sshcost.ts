/**
 * The price of one connection and of one channel, as sm121's own transport pays them
 * (src/remote: ssh2, host key checked against the site's known_hosts): require("ssh2") in a fresh
 * process, a connect (TCP, key exchange, public key auth), an empty `bash -s` channel, and one
 * channel running the node's `docker ps` (the real docker CLI and the node's dockerd).
 */
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { performance } from "node:perf_hooks";
import { connect } from "../src/remote";
import { REPO } from "../test/helpers/project";
import type { SimNode, SimSite } from "../test/site/site";
import { median, say } from "./lib/util";

export interface SshCost {
  requireSsh2Ms: number;
  connectMs: number;
  emptyChannelMs: number;
  dockerPsChannelMs: number;
  samples: number;
}

export async function measureSshCost(site: SimSite, node: SimNode, runs: number): Promise<SshCost> {
  say(`ssh cost: connect and channels to ${node.name} x${runs}`);
  const req: number[] = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(
      process.execPath,
      [
        "-e",
        `const t = process.hrtime.bigint(); require(${JSON.stringify(join(REPO, "node_modules", "ssh2"))}); ` +
          "process.stdout.write(String(Number(process.hrtime.bigint() - t) / 1e6))",
      ],
      { encoding: "utf8" },
    );
    req.push(Number(r.stdout));
  }
  const auth = {
    privateKey: readFileSync(site.clientKey, "utf8"),
    knownHosts: site.knownHosts,
    hostKeys: "strict" as const,
  };
  const conn = { kind: "ssh" as const, host: node.ip, port: node.sshPort, user: site.user };
  const c: number[] = [];
  const empty: number[] = [];
  const docker: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    const h = await connect(node.name, conn, auth);
    c.push(performance.now() - t0);
    try {
      for (let k = 0; k < 3; k++) {
        const t1 = performance.now();
        await h.run(":", { step: "bench" });
        empty.push(performance.now() - t1);
        const t2 = performance.now();
        await h.run("docker ps -q >/dev/null", { step: "bench" });
        docker.push(performance.now() - t2);
      }
    } finally {
      h.close();
    }
  }
  const m = (xs: number[]) => Math.round(median(xs));
  return {
    requireSsh2Ms: m(req),
    connectMs: m(c),
    emptyChannelMs: m(empty),
    dockerPsChannelMs: m(docker),
    samples: runs,
  };
}
