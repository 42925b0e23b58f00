/**
 * The fabric look on the simulated site (real sshd nodes, their fabric tools from etc/fabric.json,
 * a directory of RDMA character devices per node): auto resolved from the node's tools, and the
 * refusals that come before anything stops: a node without the device directory, memlock limited
 * for a tmux launch (the sandbox's own `ulimit -l`), image IDs that differ between the nodes.

 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { tmpdir } from "node:os";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { parseSite } from "../src/recipe/site";
import { Dialer } from "../src/remote";
import type { SshAuth } from "../src/remote/ssh";
import type { Site } from "../src/recipe/types";
import { lookFabric, type FabricDeployment } from "../src/fabric/resolve.serve";
import { buildImage } from "./site/exec";
import { devicesDir, setFabric, sparkFabric } from "./site/fabric";
import { endSite } from "./helpers/project";
import { startSite, type SimNode, type SimSite } from "./site/site";

const AT = allocate(__filename);

const DIR = join(tmpdir(), "sm121-fabric-site");
let site: SimSite;
const node = (i: number) => site.nodes[i] as SimNode;
const auth = (): SshAuth => ({
  knownHosts: site.knownHosts,
  hostKeys: "strict",
  privateKey: readFileSync(site.clientKey, "utf8"),
  dialAttempts: 1,
});
/** The look over connections of its own, closed after it. */
async function lookOnce(s: Site, ds: readonly FabricDeployment[]): ReturnType<typeof lookFabric> {
  const dial = new Dialer(auth());
  try {
    return await lookFabric(s, ds, dial);
  } finally {
    dial.close();
  }
}

function stack(fabric: (n: SimNode) => string, deployments = ""): string {
  const nodes = site.nodes
    .map(
      (n) =>
        `    ${n.name}:\n      ssh: { host: ${n.ip}, port: ${n.sshPort}, user: ${site.user} }\n      ip: ${n.ip}\n` +
        `      fabric: ${fabric(n)}\n`,
    )
    .join("");
  return `config:\n  sm121:nodes:\n${nodes}${deployments}`;
}

const declared = (n: SimNode) =>
  `{ interface: enp1s0f1np1, rdma: [{ hca: rocep1s0f1, gidIndex: 3 }], devices: ${devicesDir(n)} }`;

beforeAll(async () => {
  site = await startSite({ dir: DIR, nodes: ["f1", "f2", "f3"], ...AT.site() });
  for (const n of site.nodes) setFabric(n, sparkFabric(n.ip));
}, 60_000);
// The site's processes, then its files (some 200 MB: images, the registry, caches).
afterAll(() => endSite(site, DIR));

describe("the fabric look on the site", () => {
  it("resolves auto from ip, rdma link and show_gids on each node", async () => {
    const s = parseSite(
      "Pulumi.f.yaml",
      "f",
      stack((n) => `{ interface: auto, rdma: auto, devices: ${devicesDir(n)} }`),
    );
    const look = await lookOnce(s, [{ name: "d", deploy: "docker", nodes: ["f1", "f2"] }]);
    expect(look.refusals).toEqual([]);
    expect(look.resolved["f1"]).toMatchObject({
      interface: "enp1s0f1np1",
      rdma: [
        { hca: "rocep1s0f1", port: 1, gidIndex: 3 },
        { hca: "roceP2p1s0f1", port: 1, gidIndex: 3 },
      ],
    });
  });

  it("refuses a missing device directory and a tmux launch with memlock limited, naming node and fix", async () => {
    setFabric(node(2), { ...sparkFabric(node(2).ip), devices: false });
    try {
      const s = parseSite("Pulumi.f.yaml", "f", stack(declared));
      const look = await lookOnce(s, [
        { name: "pair", deploy: "docker", nodes: ["f1", "f3"] },
        { name: "native", deploy: "tmux", nodes: ["f2"] },
      ]);
      expect(look.refusals).toEqual([
        `f3: RDMA is declared (rocep1s0f1) but ${devicesDir(node(2))} does not exist on the node; ` +
          "load the RDMA modules (modprobe ib_uverbs rdma_ucm) or install the driver, or write rdma: " +
          "none in sm121:nodes.f3.fabric",
        expect.stringMatching(
          new RegExp(
            String.raw`^f2: ${"`"}ulimit -l${"`"} is \d+ KiB for a tmux launch of native; ` +
              "RDMA pins the engine's buffers, so make it unlimited",
          ),
        ),
      ]);
    } finally {
      setFabric(node(2), sparkFabric(node(2).ip));
    }
  });

  it("refuses image IDs that differ between the nodes unless ImageSync copies the image", async () => {
    const image = "nvcr.io/nvidia/vllm:25.10-py3";
    // Another build of the image under the same name on f2 (built there: an ID of its own).
    const other = await buildImage(site, node(1), image, `FROM ${image}\nLABEL sm121.test=another-build`);
    const d = [{ name: "pair", deploy: "docker" as const, nodes: ["f1", "f2"], image }];
    const s = parseSite("Pulumi.f.yaml", "f", stack(declared));
    const look = await lookOnce(s, d);
    expect(look.refusals).toHaveLength(1);
    const differs = `differs between its nodes: f1 sha256:\\w{12}, f2 ${other.slice(0, 19)}; set sm121:imageSync: true`;
    expect(look.refusals[0]).toMatch(new RegExp(`^pair: the image ${image.replace(/[./]/g, "\\$&")} ${differs}`));
    const synced = parseSite("Pulumi.f.yaml", "f", `${stack(declared)}  sm121:imageSync: true\n`);
    expect((await lookOnce(synced, d)).refusals).toEqual([]);
  });
});
