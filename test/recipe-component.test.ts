/**
 * The Recipe component's children, as Pulumi registers them, with Pulumi's mocks
 * (`pulumi.runtime.setMocks`, as pulumi-awsx tests its components): the compiled program runs in
 * a child node process (test/helpers/mock-run.js) on a small project, and reports every
 * registration: type, name, parent, dependsOn, options and inputs (secrets marked).
 *
 * The site: spark1 (protected) and spark2 over ssh, whose key is no key (the plan-time look cannot
 * reach them: a deployment there is unknown, not drifted), spark3, spark4 (protected) and spark5
 * `host: local` (fresh nodes on this machine, nothing found).
 */
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unpack } from "../src/providers/packed";
import { pinnedHostKey } from "../src/remote/knownhosts";
import { say, type Msg } from "../src/text/messages";
import { allocate } from "./site/alloc";
import { containing } from "./helpers/json";

const REPO = resolve(__dirname, "..");
// Addresses and a port of this file's own (test/site/alloc.ts), where nothing listens.
const AT = allocate(__filename);
const IP1 = AT.host(0);
const IP2 = AT.host(1);
const PORT = AT.port(0);

interface Registered {
  type: string;
  name: string;
  parent?: string;
  provider?: string;
  dependsOn: string[];
  deleteBeforeReplace: boolean;
  ignoreChanges: string[];
  inputs: Record<string, unknown>;
}

/** An ed25519 public key blob as known_hosts holds it (type name, then 32 key bytes). */
function ed25519(fill: number): string {
  const type = Buffer.from("ssh-ed25519");
  const len = (n: number) => Buffer.from([0, 0, 0, n]);
  return Buffer.concat([len(type.length), type, len(32), Buffer.alloc(32, fill)]).toString("base64");
}
const KEY1 = ed25519(1);
const KEY2 = ed25519(2);
const REVOKED = ed25519(3);

const HOOKED = [
  'engine = "vllm"',
  'deploy = "docker"',
  'model = "Qwen/Qwen3-8B"',
  'image = "vllm/vllm-openai:v0.33.0"',
  "port = 8000",
  "[hooks]",
  'before_serve = ["sudo -n sysctl -w vm.compaction_proactiveness=0"]',
  'after_stop = ["sudo -n sysctl -w vm.compaction_proactiveness=20"]',
].join("\n");
const PLAIN = ['engine = "vllm"', 'deploy = "tmux"', 'model = "Qwen/Qwen3-8B"', "port = 8001"].join("\n");
const DGPP = [
  'engine = "dgpp"',
  'deploy = "native"',
  'model = "Qwen/Qwen3.8-27B-NVFP4"',
  "[dgpp]",
  'repo = "https://example.com/dgpp.git"',
  'rev = "v0.4.1"',
  'dir = "~/dgpp"',
  "http_port = 18080",
].join("\n");

let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "sm121-mocks-"));
  mkdirSync(join(dir, "recipes"));
  writeFileSync(join(dir, "recipes", "hooked.toml"), HOOKED);
  writeFileSync(join(dir, "recipes", "plain.toml"), PLAIN);
  writeFileSync(join(dir, "recipes", "dg.toml"), DGPP);
  writeFileSync(join(dir, "Pulumi.yaml"), "name: sm121\nruntime: nodejs\n");
  writeFileSync(
    join(dir, "known_hosts"),
    [
      `[${IP1}]:${PORT} ssh-ed25519 ${KEY1}`,
      `@revoked [${IP2}]:${PORT} ssh-ed25519 ${REVOKED}`,
      `[${IP2}]:${PORT} ssh-ed25519 ${REVOKED}`,
      `${IP2} ssh-ed25519 ${KEY2}`,
      "",
    ].join("\n"),
  );
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The program's registrations for a site (its sm121: keys), as the mocks saw them. */
interface MockRun {
  registered: Registered[];
  /** The outputs each component (and the stack) registered, by name: their property names. */
  outputs: Record<string, string[]>;
  loaded: string[];
  /** The program's error, when it failed (a refusal, a deployment the look could not see), and its stack. */
  error?: string;
  errorStack?: string;
}

function run(config: Record<string, unknown>, env: Record<string, string> = {}): MockRun {
  const out = execFileSync(process.execPath, ...invocation(config, env));
  const line = out.split("\n").find((l) => l.startsWith("@registered "));
  if (line === undefined) throw new Error(`the mock run printed no @registered line:\n${out}`);
  return JSON.parse(line.slice("@registered ".length)) as MockRun;
}

/** The child node process that runs the program under the mocks, for a site and an environment. */
function invocation(
  config: Record<string, unknown>,
  env: Record<string, string>,
): [string[], { cwd: string; env: NodeJS.ProcessEnv; encoding: "utf8"; timeout: number }] {
  const home = join(dir, "home");
  const site = {
    "sm121:knownHosts": join(dir, "known_hosts"),
    "sm121:nodes": {
      spark1: { ssh: { host: IP1, port: PORT, user: "ops" }, ip: IP1, protected: true, stateDir: `${home}/s1` },
      spark2: { ssh: { host: IP2, port: PORT, user: "ops" }, ip: IP2, stateDir: `${home}/s2` },
      spark3: { host: "local", ip: "127.0.0.1", stateDir: `${home}/s3` },
      // Nodes the look reaches (this machine): their deployments are not unknown.
      spark4: { host: "local", ip: "127.0.0.1", protected: true, stateDir: `${home}/s4` },
      spark5: { host: "local", ip: "127.0.0.1", stateDir: `${home}/s5` },
    },
    "sm121:sshPrivateKey": "-----BEGIN OPENSSH PRIVATE KEY-----\nnot-a-real-key\n-----END OPENSSH PRIVATE KEY-----\n",
    ...config,
  };
  const PULUMI_CONFIG = JSON.stringify(
    Object.fromEntries(Object.entries(site).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)])),
  );
  return [
    [join(REPO, "test", "helpers", "mock-run.js"), "mocks"],
    {
      cwd: dir,
      env: {
        ...process.env,
        ...env,
        PULUMI_CONFIG,
        PULUMI_CONFIG_SECRET_KEYS: JSON.stringify(["sm121:sshPrivateKey"]),
        PULUMI_NODEJS_ROOT_DIRECTORY: dir,
        SM121_ALLOW_PROTECTED: "",
        SM121_RESTART: env["SM121_RESTART"] ?? "",
      },
      encoding: "utf8",
      timeout: 120_000,
    },
  ];
}

const DEPLOYMENTS = [
  // Listed first, on the protected node: it must still come after the others.
  { recipe: "hooked", nodes: ["spark4"] },
  { recipe: "dg", nodes: ["spark5"] },
  { recipe: "plain", nodes: ["spark3"] },
];

/** The same, with the hooked recipe on spark1, which the look cannot reach (its key is no key). */
const UNSEEN = [{ recipe: "hooked", nodes: ["spark1"] }, ...DEPLOYMENTS.slice(1)];

/** The deployment bundle an engine carries (packed under __bundle: src/providers/packed.ts). */
const bundleOf = (x: Registered): unknown => unpack(x.inputs["__bundle"] as string);

const byName = (r: { registered: Registered[] }, name: string): Registered => {
  const found = r.registered.find((x) => x.name === name);
  if (found === undefined)
    throw new Error(`${name} is not registered; registered: ${r.registered.map((x) => x.name).join(", ")}`);
  return found;
};

describe("the Recipe component under Pulumi's mocks", () => {
  describe("default hooks (inside the engine's sequence)", () => {
    let r: ReturnType<typeof run>;
    beforeAll(() => {
      r = run({ "sm121:deployments": DEPLOYMENTS });
    });

    it("registers one component per deployment with its children named from it", () => {
      expect(r.registered.map((x) => [x.type, x.name, x.parent ?? null])).toEqual(
        expect.arrayContaining([
          ["sm121:index:Site", "mocks", null],
          ["sm121:index:Deployment", "hooked", "mocks"],
          ["pulumi-nodejs:dynamic/sm121:EngineDeployment", "hooked-engine", "hooked"],
          ["sm121:index:Deployment", "dg", "mocks"],
          ["pulumi-nodejs:dynamic/sm121:DgppProvision", "dg-dgpp", "dg"],
          ["pulumi-nodejs:dynamic/sm121:EngineDeployment", "dg-engine", "dg"],
          ["sm121:index:Deployment", "plain", "mocks"],
          ["pulumi-nodejs:dynamic/sm121:EngineDeployment", "plain-engine", "plain"],
          ["pulumi:providers:pulumi-nodejs", "sm121", null],
        ]),
      );
      // Nothing else: no gateway (the site has none), no hook resource.
      expect(r.registered).toHaveLength(9);
    });

    it("registers the dynamic provider host first and serves every sm121 resource with it", () => {
      expect(r.registered[0]?.type).toBe("pulumi:providers:pulumi-nodejs");
      const dynamic = r.registered.filter((x) => x.type.startsWith("pulumi-nodejs:dynamic/"));
      expect(dynamic.length).toBe(4);
      for (const x of dynamic) expect([x.name, x.provider]).toEqual([x.name, "sm121"]);
    });

    it("registers its components' outputs with nothing that waits on an engine (no RPC after a failed step)", () => {
      // An output that waited on an engine went to Pulumi's engine after the engine's step; when another
      // deployment's step had failed by then, Pulumi's engine had stopped taking them, and the SDK printed
      // the gRPC error as a stack trace (docs/up.md, "A failed up ends in sm121's words").
      for (const name of ["mocks", "hooked", "dg", "plain"]) expect(r.outputs[name], name).toEqual([]);
    });

    it("makes the DGPP engine wait for its provisioning, and a plain engine for nothing", () => {
      expect(byName(r, "dg-engine").dependsOn).toEqual(["dg-dgpp"]);
      expect(byName(r, "plain-engine").dependsOn).toEqual([]);
      expect(byName(r, "dg-dgpp").inputs).toMatchObject({ rev: "v0.4.1", recipe: "dg" });
    });

    it("orders the deployment on the protected node after every other engine (src/index.ts)", () => {
      expect(byName(r, "hooked-engine").dependsOn).toEqual(["dg-engine", "plain-engine"]);
    });

    it("keeps the hooks in the engine's bundle, registers no command: resource, loads no @pulumi/command", () => {
      expect(bundleOf(byName(r, "hooked-engine"))).toMatchObject({
        hooks: {
          beforeServe: ["sudo -n sysctl -w vm.compaction_proactiveness=0"],
          afterStop: ["sudo -n sysctl -w vm.compaction_proactiveness=20"],
        },
      });
      expect(r.registered.filter((x) => x.type.startsWith("command:"))).toEqual([]);
      expect(r.loaded).toEqual([]);
    });

    it("passes the connection and the secrets as secrets", () => {
      const e = byName(r, "hooked-engine").inputs;
      expect(e["connection"]).toMatchObject({ secret: { privateKey: containing("not-a-real-key") } });
      expect(JSON.stringify(unpack(e["__bundle"] as string))).not.toContain("not-a-real-key");
    });
  });

  describe("sm121:hooks: pulumi-command", () => {
    let r: ReturnType<typeof run>;
    beforeAll(() => {
      r = run({ "sm121:deployments": UNSEEN, "sm121:hooks": "pulumi-command" });
    });

    it("registers one command:remote:Command per node of a hooked recipe, under its Recipe, before its engine", () => {
      const cmds = r.registered.filter((x) => x.type.startsWith("command:"));
      expect(cmds.map((x) => [x.type, x.name, x.parent])).toEqual([
        ["command:remote:Command", "hooked-hooks-spark1", "hooked"],
      ]);
      expect(byName(r, "hooked-engine").dependsOn).toEqual(["dg-engine", "hooked-hooks-spark1", "plain-engine"]);
      expect(r.loaded).toContain("@pulumi/command/remote/command.js");
    });

    it("connects with the node's address, user, the key as a secret and the host key pinned from known_hosts", () => {
      const c = byName(r, "hooked-hooks-spark1").inputs["connection"];
      // dialErrorLimit and perDialTimeout are @pulumi/command's own defaults.
      expect(c).toEqual({
        secret: {
          host: IP1,
          port: PORT,
          user: "ops",
          hostKey: `ssh-ed25519 ${KEY1}`,
          privateKey: containing("not-a-real-key"),
          dialErrorLimit: 10,
          perDialTimeout: 15,
        },
      });
    });

    it("runs before_serve on create and after_stop on delete, each hook through bash with its failure named", () => {
      const i = byName(r, "hooked-hooks-spark1").inputs;
      expect(i["create"]).toMatch(/^bash -c '.*before_serve: sudo -n sysctl -w vm.compaction_proactiveness=0/s);
      expect(i["create"]).toContain("exit 6");
      expect(i["delete"]).toMatch(/^bash -c '.*after_stop: sudo -n sysctl -w vm.compaction_proactiveness=20/s);
    });

    it("triggers on the bundle identity and secrets; spark1 unreachable is unknown, not drift: no new start", () => {
      const cmd = byName(r, "hooked-hooks-spark1");
      const engine = bundleOf(byName(r, "hooked-engine")) as { nodes: Array<{ identity: string }> };
      const triggers = cmd.inputs["triggers"] as unknown[];
      expect(triggers[0]).toBe(engine.nodes[0]?.identity);
      expect(triggers[2]).toBe("steady");
      expect(cmd.deleteBeforeReplace).toBe(true);
      expect(cmd.ignoreChanges).toEqual(["triggers[2]"]);
    });

    it("keeps every input of an unknown deployment's engine but `unknown` as stored; fails the run at the end", () => {
      const engine = byName(r, "hooked-engine");
      const kept = ["deployment", "plan", "drift", "secrets", "connection", "__bundle", "__run", "outcome"];
      expect(engine.ignoreChanges).toEqual(kept);
      const why = /spark1 unreachable: the private key cannot be used \(Cannot parse privateKey/;
      const line = new RegExp(`^Pulumi's configuration of the stack .*: sm121:nodes\\.spark1\\.ssh: ${why.source}`);
      // Stored as keys and arguments (the same bytes in every language), said here in English.
      const said = (engine.inputs["unknown"] as Msg[]).map((m) => say(m, "en"));
      expect(said).toEqual([expect.stringMatching(line)]);
      const unknown = "deployment hooked is unknown: its nodes could not be looked at;";
      expect(r.error).toContain(`${unknown} this up left it as it was and the other deployments went on:`);
      // A refusal has no frames for the run harness to format (src/components/refusal.ts).
      expect(r.errorStack).toBe(`Error: ${r.error ?? ""}`);
      expect(byName(r, "plain-engine").ignoreChanges).toEqual([]);
    });

    it("takes the hooks out of the engine's own sequence", () => {
      expect(bundleOf(byName(r, "hooked-engine"))).toMatchObject({ hooks: { beforeServe: [], afterStop: [] } });
    });
  });

  describe("sm121:hooks: pulumi-command on a node with nothing to repair", () => {
    it("uses command:local:Command for a local node and keeps the stored start stamp (ignoreChanges)", () => {
      const r = run({
        "sm121:deployments": [{ recipe: "hooked", nodes: ["spark3"] }],
        "sm121:hooks": "pulumi-command",
      });
      const cmd = byName(r, "hooked-hooks-spark3");
      expect(cmd.type).toBe("command:local:Command");
      expect(cmd.inputs["connection"]).toBeUndefined();
      expect((cmd.inputs["triggers"] as unknown[])[2]).toBe("steady");
      expect(cmd.ignoreChanges).toEqual(["triggers[2]"]);
    });

    it("stamps the run with SM121_RESTART=1", () => {
      const r = run(
        { "sm121:deployments": [{ recipe: "hooked", nodes: ["spark3"] }], "sm121:hooks": "pulumi-command" },
        { SM121_RESTART: "1" },
      );
      expect(byName(r, "hooked-hooks-spark3").ignoreChanges).toEqual([]);
    });
  });
});

describe("a run the program refuses at plan time", () => {
  it("fails before any sm121 resource registers, with its message as its stack (no frame to format)", () => {
    const r = run({ "sm121:deployments": DEPLOYMENTS }, { SM121_ROLL: "sideways" });
    expect(r.error).toMatch(/^SM121_ROLL=sideways: use SM121_ROLL=all /);
    expect(r.errorStack).toBe(`Error: ${r.error ?? ""}`);
    expect(r.registered.map((x) => x.type)).toEqual(["pulumi:providers:pulumi-nodejs"]);
  });
});

describe("sm121:hooks: pulumi-command on a node known_hosts does not know", () => {
  it("fails the program, naming the node, the file and how to add the key", () => {
    const none = join(dir, "none");
    const deployments = [{ recipe: "hooked", nodes: ["spark2"] }];
    const r = run({ "sm121:deployments": deployments, "sm121:hooks": "pulumi-command", "sm121:knownHosts": none });
    expect(r.error).toContain(
      `sm121:hooks: pulumi-command pins the host key of every node, and ${none} ` +
        `has none for [${IP2}]:${PORT} ` +
        `(node spark2); add it with \`ssh-keyscan -p ${PORT} ${IP2} >> ${none}\``,
    );
    expect(r.errorStack).toBe(`Error: ${r.error ?? ""}`);
  });
});

describe("pinnedHostKey", () => {
  it("skips a @revoked key and falls back to the bare host name, as ssh does for [host]:port", () => {
    expect(pinnedHostKey(join(dir, "known_hosts"), IP1, PORT)).toBe(`ssh-ed25519 ${KEY1}`);
    expect(pinnedHostKey(join(dir, "known_hosts"), IP2, PORT)).toBe(`ssh-ed25519 ${KEY2}`);
    expect(pinnedHostKey(join(dir, "known_hosts"), "203.0.113.9", 22)).toBeUndefined();
  });
});
