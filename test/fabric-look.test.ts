/**
 * The fabric look's parsers on the real tools' output (test/fixtures/fabric/README.md says where
 * each came from), and its judgement: `auto` resolved, each refusal naming the node and the fix.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSite } from "../src/recipe/site";
import { judgeFabric, lookWants } from "../src/fabric/resolve.serve";
import { familiarRef, imageIdsOf } from "../src/targets/dockerlook";
import {
  fabricLookScript,
  parseFabricLook,
  parseIbdev2netdev,
  parseIpAddr,
  parseIpLink,
  parseRdmaLink,
  parseShowGids,
  type FabricFacts,
} from "../src/fabric/look.render";

const fx = (f: string) =>
  readFileSync(join(__dirname, "fixtures", "fabric", f), "utf8")
    .split("\n")
    .filter((l) => l !== "");

describe("parsers on real output", () => {
  it("rdma link, aligned as a GX10 prints it, and with ports down", () => {
    expect(parseRdmaLink(fx("rdma-link-gx10.txt"))).toEqual([
      { hca: "rocep1s0f0", port: 1, state: "ACTIVE", physical: "LINK_UP", netdev: "enp1s0f0np0" },
      { hca: "rocep1s0f1", port: 1, state: "ACTIVE", physical: "LINK_UP", netdev: "enp1s0f1np1" },
      { hca: "roceP2p1s0f0", port: 1, state: "ACTIVE", physical: "LINK_UP", netdev: "enP2p1s0f0np0" },
      { hca: "roceP2p1s0f1", port: 1, state: "ACTIVE", physical: "LINK_UP", netdev: "enP2p1s0f1np1" },
    ]);
    expect(parseRdmaLink(fx("rdma-link-down.txt")).map((l) => `${l.hca} ${l.state} ${l.physical}`)).toEqual([
      "rocep1s0f0 DOWN DISABLED",
      "rocep1s0f1 ACTIVE LINK_UP",
      "roceP2p1s0f0 DOWN LINK_UP",
      "roceP2p1s0f1 ACTIVE LINK_UP",
    ]);
  });

  it("ibdev2netdev of a Spark", () => {
    expect(
      parseIbdev2netdev(fx("ibdev2netdev-spark.txt"))
        .filter((l) => l.up)
        .map((l) => `${l.hca}:${l.port} ${l.netdev}`),
    ).toEqual(["roceP2p1s0f1:1 enP2p1s0f1np1", "rocep1s0f1:1 enp1s0f1np1"]);
  });

  it("show_gids: the RoCE v2 GID of an IPv4 address", () => {
    const g = parseShowGids(fx("show-gids.txt"));
    expect(g).toHaveLength(4);
    expect(g.find((x) => x.version === "v2" && x.ipv4 === "192.168.211.242")).toEqual({
      hca: "mlx5_0",
      port: 1,
      index: 3,
      ipv4: "192.168.211.242",
      version: "v2",
      netdev: "rdma0",
    });
    expect(g[1]).toEqual({ hca: "mlx5_0", port: 1, index: 1, version: "v2", netdev: "rdma0" });
  });

  it("ip -o: addresses with their prefix, links with their carrier", () => {
    const lines = fx("ip-lo.txt");
    expect(parseIpAddr(lines)).toEqual([{ iface: "lo", address: "127.0.0.1", prefix: 8 }]);
    expect(parseIpLink(lines)).toEqual([{ iface: "lo", up: true }]);
  });
});

const SITE = `config:
  sm121:nodes:
    a: { host: local, ip: 192.168.100.11, fabric: { interface: enp1s0f1np1, rdma: [{ hca: rocep1s0f1, gidIndex: 3 }] } }
    b: { host: local, ip: 192.168.101.12, fabric: auto }
  sm121:deployments:
    - { recipe: r, nodes: [a, b] }
`;

function facts(ip: string, over: Partial<FabricFacts> = {}): FabricFacts {
  return {
    addrs: [{ iface: "enp1s0f1np1", address: ip, prefix: 24 }],
    links: [{ iface: "enp1s0f1np1", up: true }],
    rdma: parseRdmaLink(fx("rdma-link-down.txt")),
    ibdev: [],
    gids: [{ hca: "rocep1s0f1", port: 1, index: 3, ipv4: ip, version: "v2" }],
    devices: ["rdma_cm", "uverbs0"],
    memlock: "unlimited",
    ...over,
  };
}

describe("judgement", () => {
  const site = parseSite("Pulumi.t.yaml", "t", SITE);
  const d = { name: "r", deploy: "tmux" as const, nodes: ["a", "b"] };

  it("resolves auto from the node's tools and refuses fabric addresses on two subnets", () => {
    const j = judgeFabric(site, [d], { a: facts("192.168.100.11"), b: facts("192.168.101.12") });
    expect(j.resolved["b"]).toEqual({
      interface: "enp1s0f1np1",
      devices: "/dev/infiniband",
      rdma: [
        { hca: "rocep1s0f1", port: 1, gidIndex: 3 },
        { hca: "roceP2p1s0f1", port: 1, gidIndex: 3 },
      ],
      found:
        "found by the plan-time look: enp1s0f1np1 holds 192.168.101.12; " +
        "ports up: rocep1s0f1:1, roceP2p1s0f1:1, RoCE v2 GID 3",
    });
    expect(j.refusals).toEqual([
      "r: the fabric addresses of its nodes are not on one subnet: a 192.168.100.11/24 (192.168.100.0/24), " +
        "b 192.168.101.12/24 (192.168.101.0/24); give the nodes' fabric interfaces addresses on one subnet " +
        "(or name the interfaces that share one)",
    ]);
  });

  it("names the node and the fix: no device directory, a port down, memlock limited", () => {
    const down = facts("192.168.100.11", {
      devices: undefined,
      memlock: "8192",
      rdma: parseRdmaLink(fx("rdma-link-down.txt")).map((l) =>
        l.hca === "rocep1s0f1" ? { ...l, state: "DOWN", physical: "DISABLED" } : l,
      ),
    });
    const j = judgeFabric(site, [d], { a: down, b: facts("192.168.100.12") });
    expect(j.refusals.filter((r) => r.startsWith("a: "))).toEqual([
      "a: RDMA is declared (rocep1s0f1) but /dev/infiniband does not exist on the node; " +
        "load the RDMA modules (modprobe ib_uverbs rdma_ucm) or install the driver, or write rdma: " +
        "none in sm121:nodes.a.fabric",
      "a: the link of rocep1s0f1/1 (enp1s0f1np1) is down (state DOWN, physical_state DISABLED); " +
        "check the cable and `sudo ip link set enp1s0f1np1 up` on a",
      "a: `ulimit -l` is 8192 KiB for a tmux launch of r; " +
        "RDMA pins the engine's buffers, so make it unlimited for the node's user " +
        "(`* - memlock unlimited` in /etc/security/limits.conf, then log in again; " +
        "LimitMEMLOCK=infinity for a service)",
    ]);
  });

  it("a container launch needs no memlock of the node's login (docker sets it)", () => {
    const j = judgeFabric(site, [{ ...d, deploy: "docker" }], {
      a: facts("192.168.100.11", { memlock: "8192" }),
      b: facts("192.168.101.12", { memlock: "8192" }),
    });
    expect(j.refusals.filter((r) => r.includes("ulimit"))).toEqual([]);
  });
});

describe("what the look asks a node", () => {
  const site = parseSite("Pulumi.t.yaml", "t", SITE);
  const asked = (node: "a" | "b" | undefined, image?: string) => {
    const script = fabricLookScript(
      lookWants(node === undefined ? undefined : site.nodes[node]?.fabric),
      "/dev/ib",
      image,
    );
    return [...script.matchAll(/^echo '@sm121-fabric (\S+)'$/gm)].map((m) => m[1]);
  };

  it("auto: every tool; named ports: no netdev or GID tool; no fabric: the image's ID alone, or nothing", () => {
    const all = ["ip-addr", "ip-link", "rdma", "ibdev2netdev", "show_gids", "devices", "memlock"];
    expect(asked("b")).toEqual(all);
    expect(asked("a", "img:1")).toEqual(["ip-addr", "ip-link", "rdma", "devices", "memlock", "image"]);
    expect(asked(undefined, "img:1")).toEqual(["image"]);
    expect(asked(undefined)).toEqual([]);
    expect(fabricLookScript(lookWants(undefined), "/dev/ib", undefined)).toBe("");
  });

  it("a section the look did not ask for reads as nothing found", () => {
    const f = parseFabricLook("@sm121-fabric image\nsha256:abc\n");
    expect(f).toEqual({ addrs: [], links: [], rdma: [], ibdev: [], gids: [], memlock: "", imageId: "sha256:abc" });
  });
});

describe("the image check from the node look's one docker call (targets/dockerlook)", () => {
  it("names an image as docker lists it: Docker Hub's short form, the default tag, a digest over a tag", () => {
    expect(familiarRef("ubuntu:24.04")).toBe("ubuntu:24.04");
    expect(familiarRef("docker.io/library/ubuntu:24.04")).toBe("ubuntu:24.04");
    expect(familiarRef("index.docker.io/vllm/vllm-openai")).toBe("vllm/vllm-openai:latest");
    expect(familiarRef("nvcr.io/nvidia/vllm:26.01-py3")).toBe("nvcr.io/nvidia/vllm:26.01-py3");
    expect(familiarRef("nvcr.io/nvidia/vllm:26.01-py3@sha256:abc")).toBe("nvcr.io/nvidia/vllm@sha256:abc");
    expect(familiarRef("localhost:5000/x")).toBe("localhost:5000/x:latest");
  });

  it("finds each image asked about among the images found, by its tags and digests; null where it is none", () => {
    const lines = [
      "sha256:aaa ubuntu:24.04 ubuntu@sha256:111",
      "sha256:bbb nvcr.io/nvidia/vllm:26.01-py3 nvcr.io/nvidia/vllm@sha256:222",
    ];
    const asked = ["nvcr.io/nvidia/vllm:26.01-py3", "docker.io/library/ubuntu@sha256:111", "vllm/vllm-openai:v1"];
    expect(imageIdsOf(lines, asked)).toEqual({
      "nvcr.io/nvidia/vllm:26.01-py3": "sha256:bbb",
      "docker.io/library/ubuntu@sha256:111": "sha256:aaa",
      "vllm/vllm-openai:v1": null,
    });
  });
});
