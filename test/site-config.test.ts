/**
 * The site in Pulumi.<stack>.yaml: defaults, and every invalid input with its exact message. Site
 * fields are named as the operator writes them: `sm121:<key>` and then the dotted path.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { parseSite } from "../src/recipe/site";
import { errorsOf, ONE_NODE } from "./helpers/spec";

const F = "Pulumi.s.yaml";
const parse = (text: string) => parseSite(F, "s", text);

const bad = (text: string): string[] => errorsOf(() => parse(text));

type Case = [title: string, text: string, message: string];

describe("parseSite: defaults", () => {
  const site = parse(
    `${ONE_NODE}  sm121:deployments:\n    - { recipe: qwen38-flash, profile: best, nodes: [spark1] }\n` +
      "    - { recipe: qwen3-32b-vllm-tp2, nodes: [spark1] }\n" +
      "    - { name: mine, recipe: qwen3-32b-vllm-tp2, nodes: [spark1] }\n",
  );

  it("fills the node defaults: ssh on port 22, unprotected, ~/.sm121", () => {
    expect(site.nodes["spark1"]).toEqual({
      name: "spark1",
      host: "ssh",
      ssh: { host: "203.0.113.1", port: 22, user: "ops" },
      ip: "203.0.113.1",
      protected: false,
      env: {},
      vars: {},
      recipes: {},
      stateDir: "~/.sm121",
      gpus: 1,
    });
  });

  it("takes liveness defaults for a 100 GB model: 10 s for a token, 3 restarts an hour", () => {
    expect(site.liveness).toEqual({ timeoutS: 10, maxRestarts: 3, windowS: 3600 });
    const set = parse(`${ONE_NODE}  sm121:liveness: { timeout: "30", maxRestarts: 0 }\n`);
    expect(set.liveness).toEqual({ timeoutS: 30, maxRestarts: 0, windowS: 3600 });
  });

  it("fills the site defaults of seed 001 and the strict host keys", () => {
    expect([site.minMemAvailableGiB, site.memTimeoutS, site.readyGraceS]).toEqual([100, 600, 300]);
    expect([site.recipesDir, site.knownHosts, site.hostKeys, site.rollback]).toEqual([
      "recipes",
      "~/.ssh/known_hosts",
      "strict",
      "off",
    ]);
    expect(site.gateway).toBeUndefined();
    expect([site.file, site.stack]).toEqual([F, "s"]);
  });

  it("names a deployment recipe-profile, or the recipe, unless it has a name", () => {
    expect(site.deployments.map((d) => d.name)).toEqual(["qwen38-flash-best", "qwen3-32b-vllm-tp2", "mine"]);
    expect(site.deployments[0]).toEqual({
      name: "qwen38-flash-best",
      recipe: "qwen38-flash",
      profile: "best",
      nodes: ["spark1"],
      overlayWins: false,
      at: { entry: ["deployments", 0], nodes: ["deployments", 0, "nodes"] },
    });
  });

  it("turns numeric node env values into strings", () => {
    const s = parse(`${ONE_NODE}      env: { PORT: 8000, REQUIRE_IDLE_GPU: 1, BIND: 127.0.0.1 }\n`);
    expect(s.nodes["spark1"]?.env).toEqual({ PORT: "8000", REQUIRE_IDLE_GPU: "1", BIND: "127.0.0.1" });
  });

  it("ignores other namespaces and never reads the secret keys from the file", () => {
    const s = parse(
      `${ONE_NODE}  aws:region: us-east-1\n  sm121:hfToken:\n    secure: AAABAJdGVzdA==\n  sm121:apiKey:\n` +
        "    secure: AAABAJdGVzdA==\n",
    );
    expect(Object.keys(s.nodes)).toEqual(["spark1"]);
  });

  it(
    "reads the example site Pulumi.spark-site.yaml: two Sparks, each with its fabric found by the look, " +
      "no gateway",
    () => {
      const text = readFileSync(join(__dirname, "..", "Pulumi.spark-site.yaml"), "utf8");
      const s = parseSite("Pulumi.spark-site.yaml", "spark-site", text);
      expect(Object.keys(s.nodes)).toEqual(["spark1", "spark2"]);
      expect(s.nodes["spark1"]).toMatchObject({
        protected: false,
        ip: "192.168.100.1",
        fabric: { interface: "auto", rdma: "auto" },
        gpus: 1,
        env: { HF_HOME: "~/.cache/huggingface" },
      });
      const at = { entry: ["deployments", 0], nodes: ["deployments", 0, "nodes"] };
      const solo = { name: "qwen3-8b-solo", recipe: "qwen3-8b-solo", nodes: ["spark1"], overlayWins: false, at };
      expect(s.deployments).toEqual([solo]);
      expect(s.gateway).toBeUndefined();
      expect(s.minMemAvailableGiB).toBe(100);
    },
  );
});

describe("YAML syntax errors point at the spot", () => {
  const cases: Case[] = [
    [
      "an unclosed flow map",
      "config:\n  sm121:nodes: {\n",
      `${F}:3:1: YAML syntax: Flow map in block collection must be sufficiently indented and end with a }; ` +
        "fix the syntax at this spot",
    ],
    [
      "a node defined twice",
      "config:\n  sm121:nodes:\n    spark1:\n      host: local\n      ip: 203.0.113.1\n    spark1:\n" +
        "      host: local\n      ip: 203.0.113.2\n",
      `${F}:6:5: YAML syntax: Map keys must be unique; fix the syntax at this spot`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));
});

describe("nodes", () => {
  const cases: Case[] = [
    [
      "an unknown node key",
      `${ONE_NODE}      protect: true\n`,
      `${F}:6:7: sm121:nodes.spark1.protect: unknown key; did you mean protected?`,
    ],
    [
      "an unknown ssh key",
      "config:\n  sm121:nodes:\n    spark1:\n      ssh: { host: 203.0.113.1, user: ops, prot: 1 }\n" +
        "      ip: 203.0.113.1\n",
      `${F}:4:44: sm121:nodes.spark1.ssh.prot: unknown key; did you mean port?`,
    ],
    [
      "a bad ip",
      ONE_NODE.replace("ip: 203.0.113.1", "ip: 203.0.113.300"),
      `${F}:5:7: sm121:nodes.spark1.ip: is not an IPv4 address; ` +
        "write the node's address on the cluster network, e.g. 203.0.113.12",
    ],
    [
      "no ssh block (host defaults to ssh)",
      "config:\n  sm121:nodes:\n    spark1:\n      ip: 203.0.113.1\n",
      `${F}:3:5: sm121:nodes.spark1.host: host: ssh needs an ssh block; ` +
        "add ssh: {host: <name or address>, user: <user>}",
    ],
    [
      "host: ssh without an ssh block",
      "config:\n  sm121:nodes:\n    spark1:\n      host: ssh\n      ip: 203.0.113.1\n",
      `${F}:4:7: sm121:nodes.spark1.host: host: ssh needs an ssh block; ` +
        "add ssh: {host: <name or address>, user: <user>}",
    ],
    [
      "an ssh block without host",
      "config:\n  sm121:nodes:\n    spark1:\n      ssh: { user: ops }\n      ip: 203.0.113.1\n",
      `${F}:4:7: sm121:nodes.spark1.ssh.host: is required; add it (string)`,
    ],
    [
      "an ssh host with a space",
      ONE_NODE.replace("host: 203.0.113.1", 'host: "a b"'),
      `${F}:4:14: sm121:nodes.spark1.ssh.host: is not a host name or address; write e.g. spark2 or 203.0.113.12`,
    ],
    [
      "ssh port 0",
      ONE_NODE.replace("user: ops }", "user: ops, port: 0 }"),
      `${F}:4:44: sm121:nodes.spark1.ssh.port: is below 1; use at least 1`,
    ],
    [
      "an unknown host kind",
      "config:\n  sm121:nodes:\n    spark1:\n      host: remote\n      ip: 203.0.113.1\n",
      `${F}:4:7: sm121:nodes.spark1.host: "remote" is not allowed; use one of "local", "ssh"`,
    ],
    [
      "a node name with capitals",
      "config:\n  sm121:nodes:\n    Spark1:\n      host: local\n      ip: 203.0.113.1\n",
      `${F}:3:5: sm121:nodes.Spark1: a node name must be lower-case letters, digits and -, at most 48; rename it`,
    ],
    [
      "an env key that is not a node key",
      `${ONE_NODE}      env: { FOO: bar }\n`,
      `${F}:6:14: sm121:nodes.spark1.env.FOO: unknown key; ` +
        "remove it (known keys: HF_HOME, BIND, PORT, REQUIRE_IDLE_GPU)",
    ],
    [
      "an env key with a typo",
      `${ONE_NODE}      env: { HF_HOM: /x }\n`,
      `${F}:6:14: sm121:nodes.spark1.env.HF_HOM: unknown key; did you mean HF_HOME?`,
    ],
    [
      "a space in a node env value",
      `${ONE_NODE}      env: { HF_HOME: "/a b" }\n`,
      `${F}:6:14: sm121:nodes.spark1.env.HF_HOME: HF_HOME may contain only letters, digits and _ . / : = , ` +
        "@ + % - after a leading ~; remove spaces, quotes and shell characters",
    ],
    [
      "a space in another node env value",
      `${ONE_NODE}      env: { REQUIRE_IDLE_GPU: "1 x" }\n`,
      `${F}:6:14: sm121:nodes.spark1.env.REQUIRE_IDLE_GPU: a node env value may contain only letters, digits ` +
        "and _ . / : = , @ + % -; remove spaces, quotes and shell characters",
    ],
    [
      "a shell character in a var",
      `${ONE_NODE}      vars: { tritonCache: "/x;rm" }\n`,
      `${F}:6:15: sm121:nodes.spark1.vars.tritonCache: a var value may contain only letters, digits and _ . / : ` +
        "= , @ + % -; remove spaces, quotes and shell characters",
    ],
    [
      "a var name with a dash",
      `${ONE_NODE}      vars: { "bad-name": x }\n`,
      `${F}:6:15: sm121:nodes.spark1.vars.bad-name: a var name is letters, digits and _; rename it`,
    ],
    [
      "a bad gatewayUrl",
      `${ONE_NODE}      gatewayUrl: not-a-url\n`,
      `${F}:6:7: sm121:nodes.spark1.gatewayUrl: is not a URL; write e.g. http://203.0.113.12:8000`,
    ],
    [
      "protected as a string",
      `${ONE_NODE}      protected: "yes"\n`,
      `${F}:6:7: sm121:nodes.spark1.protected: expected boolean, got string; write a boolean`,
    ],
    [
      "a node recipe key typo",
      `${ONE_NODE}      recipes:\n        q: { dir: ~/q, container: q, dockerargs: x }\n`,
      `${F}:7:38: sm121:nodes.spark1.recipes.q.dockerargs: unknown key; did you mean dockerArgs?`,
    ],
    [
      "a node recipe without container",
      `${ONE_NODE}      recipes:\n        q: { dir: ~/q }\n`,
      `${F}:7:9: sm121:nodes.spark1.recipes.q.container: is required; add it (string)`,
    ],
    [
      "a .. in a node recipe dir",
      `${ONE_NODE}      recipes:\n        q: { dir: ~/../q, container: q }\n`,
      `${F}:7:14: sm121:nodes.spark1.recipes.q.dir: dir contains a ".." segment; use a path without ..`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports every bad var at once", () => {
    expect(bad(`${ONE_NODE}      vars: { a: "x y", b: "$HOME" }\n`)).toEqual([
      `${F}:6:15: sm121:nodes.spark1.vars.a: a var value may contain only letters, digits and _ . / : = , ` +
        "@ + % -; remove spaces, quotes and shell characters",
      `${F}:6:25: sm121:nodes.spark1.vars.b: a var value may contain only letters, digits and _ . / : = , ` +
        "@ + % -; remove spaces, quotes and shell characters",
    ]);
  });
});

describe("deployments", () => {
  const dep = (lines: string) => `${ONE_NODE}  sm121:deployments:\n${lines}`;
  const cases: Case[] = [
    [
      "an unknown node",
      dep("    - recipe: r\n      nodes: [spark1, spark9]\n"),
      `${F}:8:23: sm121:deployments[0].nodes[1]: node "spark9" is not in sm121:nodes; ` +
        "add it to sm121:nodes or use one of spark1",
    ],
    [
      "a node listed twice",
      dep("    - recipe: r\n      nodes: [spark1, spark1]\n"),
      `${F}:8:23: sm121:deployments[0].nodes[1]: node "spark1" is listed twice; list each node once, rank 0 first`,
    ],
    [
      "two deployments with one name",
      dep("    - recipe: r\n      nodes: [spark1]\n    - recipe: r\n      nodes: [spark1]\n"),
      `${F}:9:7: sm121:deployments[1]: deployment name "r" is already used by deployments[0]; ` +
        "set name: on one of them to a distinct name",
    ],
    [
      "no nodes",
      dep("    - recipe: r\n      nodes: []\n"),
      `${F}:8:7: sm121:deployments[0].nodes: a deployment needs at least one node; list the nodes, rank 0 first`,
    ],
    [
      "a recipe name with capitals",
      dep("    - recipe: R_bad\n      nodes: [spark1]\n"),
      `${F}:7:7: sm121:deployments[0].recipe: recipe must be lower-case letters, digits and -, at most 48; rename it`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));

  it("reports a missing key and its typo together", () => {
    // (nodes or replicas: the missing key is checked after the object's own keys)
    expect(bad(dep("    - recipe: r\n      node: [spark1]\n"))).toEqual([
      `${F}:8:7: sm121:deployments[0].node: unknown key; did you mean nodes?`,
      `${F}:7:7: sm121:deployments[0].nodes: is required; add it (array)`,
    ]);
  });

  it("reports every deployment error at once", () => {
    const text = dep(
      "    - recipe: r\n      nodes: [spark9, spark1, spark1]\n    - recipe: r\n      nodes: [spark1]\n",
    );
    expect(bad(text)).toEqual([
      `${F}:8:15: sm121:deployments[0].nodes[0]: node "spark9" is not in sm121:nodes; ` +
        "add it to sm121:nodes or use one of spark1",
      `${F}:8:31: sm121:deployments[0].nodes[2]: node "spark1" is listed twice; list each node once, rank 0 first`,
      `${F}:9:7: sm121:deployments[1]: deployment name "r" is already used by deployments[0]; ` +
        "set name: on one of them to a distinct name",
    ]);
  });
});

describe("top-level keys", () => {
  const cases: Case[] = [
    ["no sm121:nodes", "config:\n  aws:region: us-east-1\n", `${F}:1:1: sm121:nodes: is required; add it (record)`],
    [
      "sm121:nodes as a list",
      "config:\n  sm121:nodes: []\n",
      `${F}:2:3: sm121:nodes: expected record, got array; write a record`,
    ],
    [
      "an unknown top-level key",
      `${ONE_NODE}  sm121:gatway: { path: x }\n`,
      `${F}:6:3: sm121:gatway: unknown key; did you mean gateway?`,
    ],
    [
      "hostKeys not strict or accept-new",
      `${ONE_NODE}  sm121:hostKeys: ask\n`,
      `${F}:6:3: sm121:hostKeys: "ask" is not allowed; use one of "strict", "accept-new"`,
    ],
    [
      "an unknown gateway format",
      `${ONE_NODE}  sm121:gateway: { path: x, format: nginx }\n`,
      `${F}:6:29: sm121:gateway.format: "nginx" is not allowed; use one of "sm121", "litellm", "llama-swap"`,
    ],
    [
      "a negative memory gate",
      `${ONE_NODE}  sm121:minMemAvailableGiB: -1\n`,
      `${F}:6:3: sm121:minMemAvailableGiB: must be above 0; use a number above 0`,
    ],
    [
      "a liveness timeout of 0",
      `${ONE_NODE}  sm121:liveness: { timeout: 0 }\n`,
      `${F}:6:21: sm121:liveness.timeout: timeout is below 1; use 1 to 600 s`,
    ],
    [
      "a liveness window above a week",
      `${ONE_NODE}  sm121:liveness:\n    windowS: 999999\n`,
      `${F}:7:5: sm121:liveness.windowS: windowS is above 604800; use 60 to 604800 s (one week)`,
    ],
    [
      "maxRestarts that is no whole number",
      `${ONE_NODE}  sm121:liveness: { maxRestarts: 2.5 }\n`,
      `${F}:6:21: sm121:liveness.maxRestarts: maxRestarts is not a whole number; use 0 to 100 restarts`,
    ],
    [
      "an unknown liveness key",
      `${ONE_NODE}  sm121:liveness: { timeoutS: 5 }\n`,
      `${F}:6:21: sm121:liveness.timeoutS: unknown key; did you mean timeout?`,
    ],
  ];
  it.each(cases)("%s", (_, text, message) => expect(bad(text)).toEqual([message]));
});
