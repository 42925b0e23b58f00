/**
 * The CLI's pure parts, on the examples site (every engine and target): the status probe (no HTTP
 * on a protected DGPP node), what doctor asks of each node, the host-key advice, and
 * `render --json` against its schema.
 */
import { copyFileSync, mkdtempSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parseArgs } from "../src/cli/args";
import { flagSpec } from "../src/cli/usage";
import { connectFailure, hostKeyRefusalOf } from "../src/cli/connect";
import { expandHome } from "../src/text/home";
import { needsOf } from "../src/cli/doctor";
import { hostKeyFix } from "../src/cli/doctorplan";
import { componentUrn, otherChanges } from "../src/cli/down";
import { allowedProtected, leavingRefusal } from "../src/text/protected";
import { noEndpoint } from "../src/cli/smoke";
import { renderCommand } from "../src/cli/render";
import { renderSchema } from "../src/cli/schemas";
import { factsScript, probeScript } from "../src/cli/statusscripts";
import { type NodeState } from "../src/serve/probe";
import { driftFindings, driftOf } from "../src/serve/drift";
import { loadProject } from "../src/project";
import { TransportError } from "../src/remote";
import { transportFix } from "../src/remote/errors";
import { msg, say } from "../src/text/messages";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";

const ROOT = join(__dirname, "..");
const project = mkdtempSync(join(tmpdir(), "sm121-cliunits-"));
copyFileSync(join(__dirname, "fixtures", "sites", "examples.yaml"), join(project, "Pulumi.examples.yaml"));
symlinkSync(join(ROOT, "recipes"), join(project, "recipes"));
afterAll(() => rmSync(project, { recursive: true, force: true }));
const p = loadProject(project, "examples");

function at(deployment: string, node: string): { b: DeploymentBundle; nb: NodeBundle } {
  const b = p.bundles.find((x) => x.deployment === deployment);
  const nb = b?.nodes.find((x) => x.node === node);
  if (b === undefined || nb === undefined) throw new Error(`no ${deployment}/${node}`);
  return { b, nb };
}

describe("expandHome", () => {
  it("expands ~ of the machine that runs sm121", () => {
    expect(expandHome("~/x", "/home/ops")).toBe("/home/ops/x");
    expect(expandHome("/abs", "/home/ops")).toBe("/abs");
  });
});

describe("the status probe", () => {
  it("asks the target's status, hashes the files, reads the .env and both KV cache sources", () => {
    const { b, nb } = at("qwen38-flash-best", "flash-best");
    const s = probeScript(b, nb, false);
    // One docker call for the container: its image, its state and its bind mounts (the newer-mount
    // rule) together. The image start.sh runs is its profile's business: no question of its tag.
    expect(s.match(/docker inspect/g)).toHaveLength(1);
    expect(s).toContain(
      "docker inspect -f '{{.Image}} {{.State.Running}} {{.State.StartedAt}}" +
        '{{range .Mounts}}{{if eq .Type "bind"}}{{println}}{{.Source}}{{end}}{{end}}\' qwen38-flash',
    );
    expect(s).not.toContain("docker image inspect");
    expect(s).toMatch(/^wf=\(\/home\/ops\/spark-recipes\/qwen38-flash\/\.env /m);
    expect(s).toContain('out=$(sha256sum -- "${wr[@]}")');
    expect(s).toContain(
      "\"$( { grep -vE '^(export )?(HF_TOKEN|API_KEY)=' /home/ops/spark-recipes/qwen38-flash/.env || true; } | " +
        'base64 -w0)"',
    );
    expect(s).toContain("grep -E '[CG]PU KV cache size: ([0-9,]+) tokens'");
    expect(s).toContain('"$HOME"/.sm121/deployments/qwen38-flash-best/kv-cache.txt');
    expect(s).not.toContain("curl");
    expect(factsScript()).toContain(
      "nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader,nounits",
    );
  });

  it("leaves out a status script that would ask the engine's API (DGPP) unless HTTP is allowed", () => {
    const { b, nb } = at("qwen38-27b-nvfp4-dgpp", "dgpp-1");
    expect(nb.status).toContain("curl");
    expect(nb.statusAsksApi).toBe(true);
    expect(probeScript(b, nb, false)).not.toContain("curl");
    expect(probeScript(b, nb, true)).toContain("curl");
  });

  it("knows which status scripts ask the API from the target that made them, not from their text", () => {
    const asks = p.bundles.flatMap((b) => b.nodes.filter((nb) => nb.statusAsksApi).map((nb) => nb.node));
    expect(asks).toEqual(["dgpp-1"]);
    // The same script text, said to ask nothing, is run: the flag decides, not a regex over the script.
    const { b, nb } = at("qwen38-27b-nvfp4-dgpp", "dgpp-1");
    expect(probeScript(b, { ...nb, statusAsksApi: false }, false)).toContain("curl");
  });

  it("judges drift as refresh does", () => {
    const { nb } = at("qwen3-32b-vllm-tp2", "vllm-1");
    const path = nb.files[0]?.path ?? "";
    const sha = nb.files[0]?.sha256 ?? "";
    const rec = { identity: nb.identity, files: { [path]: sha } };
    const st = (
      files: Record<string, string>,
      running: boolean,
      recorded: NodeState["recorded"] | null = rec,
    ): NodeState => ({
      failed: [],
      others: [],
      holders: [],
      running,
      files: Object.fromEntries(Object.entries(files).map(([f, h]) => [f, { sha256: h, ctime: 0 }])),
      ...(recorded !== null && { recorded }),
    });
    const kinds = (s: NodeState) => driftFindings(nb, s).map((d) => [d.kind, d.files]);
    expect(kinds(st({ [path]: sha }, true))).toEqual([]);
    expect(kinds(st({ [path]: "0".repeat(64) }, true))).toEqual([["edited", [path]]]);
    expect(kinds(st({}, true))).toEqual([["removed", [path]]]);
    expect(kinds(st({}, false, null))).toEqual([["no-record", []]]);
    expect(kinds(st({ [path]: sha }, true, { ...rec, identity: "x" }))).toEqual([["other-bundle", []]]);
    expect(kinds(st({ [path]: sha }, false))).toEqual([["not-running", []]]);
    // The plan leaves a first serve and a new bundle to the diff: those are no drift there.
    expect(driftOf(nb, st({}, false, null))).toEqual([]);
    const words = driftOf(nb, st({ [path]: sha }, false)).map((d) => say(d.said, "en"));
    expect(words).toEqual([`${nb.node}: the engine is not running (not found)`]);
  });
});

describe("smoke on a node without an endpoint", () => {
  it("names the node that serves a headless rank's deployment, instead of `in deployment *`", () => {
    expect(noEndpoint(p.bundles, "vllm-2", undefined)).toEqual([
      "node vllm-2 is rank 1 of qwen3-32b-vllm-tp2 and serves no OpenAI endpoint; smoke vllm-1, which serves it",
    ]);
    expect(noEndpoint(p.bundles, "vllm-2", "qwen3-30b-sglang-tmux")).toEqual([
      "node vllm-2 is not a node of deployment qwen3-30b-sglang-tmux; its nodes: sglang-1, sglang-2",
    ]);
  });
});

describe("down", () => {
  it("finds the deployment's component in an exported state, under its type before the rename too", () => {
    const exported = JSON.stringify({
      deployment: {
        resources: [
          { urn: "urn:pulumi:sim::sm121::pulumi:pulumi:Stack::sm121-sim", type: "pulumi:pulumi:Stack" },
          { urn: "urn:pulumi:sim::sm121::sm121:index:Recipe::small-x", type: "sm121:index:Recipe" },
          { urn: "urn:pulumi:sim::sm121::sm121:index:Recipe::small", type: "sm121:index:Recipe" },
          {
            urn: "urn:pulumi:sim::sm121::sm121:index:Recipe$sm121:index:EngineDeployment::small",
            type: "sm121:index:EngineDeployment",
          },
        ],
      },
    });
    expect(componentUrn(exported, "small")).toBe("urn:pulumi:sim::sm121::sm121:index:Recipe::small");
    expect(componentUrn(exported, "solo")).toBeUndefined();
    // Written since the rename: the component's own type.
    const now = exported.replace(/index:Recipe/g, "index:Deployment");
    expect(componentUrn(now, "small")).toBe("urn:pulumi:sim::sm121::sm121:index:Deployment::small");
  });

  it("reads the allowance for protected nodes, and says the refusal of a down the program says", () => {
    expect(allowedProtected({ SM121_ALLOW_PROTECTED: " spark1, ,spark2 " })).toEqual(["spark1", "spark2"]);
    expect(allowedProtected({})).toEqual([]);
    expect(leavingRefusal("spark1", "solo", true)).toBe(
      "node spark1 is protected and this run would stop deployment solo on it (sm121 down); " +
        "run with SM121_ALLOW_PROTECTED=spark1 to allow it",
    );
    expect(leavingRefusal("spark1", "solo", false)).toContain("(the site no longer puts it there)");
  });

  it("finds what a down's preview would change besides the deployment and the gateway", () => {
    const step = (op: string, tail: string) => ({ op, urn: `urn:pulumi:sim::sm121::${tail}` });
    const preview = (steps: object[]) => JSON.stringify({ steps });
    const own = [
      step("delete", "sm121:index:Deployment::small"),
      step("delete", "sm121:index:Deployment$sm121:index:EngineDeployment::small-engine"),
      step("update", "sm121:index:GatewayFragment::gateway"),
      step("same", "sm121:index:Deployment::solo"),
    ];
    expect(otherChanges(preview(own), "small")).toEqual([]);
    expect(
      otherChanges(
        preview([
          ...own,
          step("update", "sm121:index:Deployment$sm121:index:EngineDeployment::solo-engine"),
          step("delete", "sm121:index:Deployment::small-x"),
        ]),
        "small",
      ),
    ).toEqual(["update solo-engine", "delete small-x"]);
  });
});

describe("doctor's needs", () => {
  const needs = (deployment: string, node: string) => {
    const x = at(deployment, node);
    const n = p.site.nodes[node];
    if (n === undefined) throw new Error(node);
    return needsOf(n, [x], p.recipes).map((c) => `${c.check} ${c.subject} ${c.severity}`);
  };

  it("asks each node for what its target and engine use", () => {
    // gr8's before_serve hook sets vm.compaction_proactiveness with sudo: there sudo -n is a must.
    expect(needs("glm53-full-tp4-gr8", "gr8-2")).toEqual([
      "command curl problem",
      "sudo sudo -n true problem",
      "command docker problem",
      expect.stringMatching(/^image ghcr\.io\/kindlingai\/gr8:\S+ problem$/),
    ]);
    expect(needs("qwen3-30b-sglang-tmux", "sglang-1")).toEqual([
      "command curl problem",
      "sudo sudo -n true warning",
      "command tmux problem",
      "engine python3 problem",
    ]);
    expect(needs("qwen38-27b-nvfp4-dgpp", "dgpp-1")).toContain("command git problem");
    expect(needs("qwen38-27b-nvfp4-dgpp", "dgpp-2")).not.toContain("command git problem");
    expect(needs("qwen38-flash-datagen", "flash-datagen")).toContain("image nvcr.io/nvidia/vllm:25.10-py3 problem");
  });

  it("says how to accept an unknown host key and how to clear a changed one", () => {
    const conn = { kind: "ssh" as const, host: "203.0.113.4", port: 2222, user: "ops" };
    const refused = msg("remote.hostKeyRefused", { where: "ops@203.0.113.4:2222", reason: "not in /kh" });
    const refusal = { status: "new" as const, fingerprint: "SHA256:abcDEF+/123" };
    const unknown = new TransportError(
      "gr8-4",
      "connect",
      refused,
      transportFix("host-key", "gr8-4"),
      "host-key",
      refusal,
    );
    expect(connectFailure(unknown)).toBe("host-key");
    expect(hostKeyRefusalOf(unknown)?.fingerprint).toBe("SHA256:abcDEF+/123");
    expect(hostKeyFix(hostKeyRefusalOf(unknown), conn, "/kh")).toBe("ssh-keyscan -p 2222 203.0.113.4 >> /kh");
    const changed = { status: "changed" as const, fingerprint: "SHA256:x" };
    expect(hostKeyFix(changed, conn, "/kh")).toBe("ssh-keygen -R '[203.0.113.4]:2222' -f /kh");
    // A revoked key has no command that makes it right: the message says what to do.
    expect(hostKeyFix({ status: "revoked", fingerprint: "SHA256:x" }, conn, "/kh")).toBeNull();
    const login = msg("remote.dialAuth", { where: "x", seen: "All configured authentication methods failed" });
    expect(connectFailure(new TransportError("n", "connect", login, transportFix("auth", "n"), "auth"))).toBe("auth");
    expect(connectFailure(new Error("ECONNREFUSED"))).toBe("unreachable");
  });
});

describe("render --json", () => {
  it.each(p.bundles.map((b) => [b.deployment]))("%s matches its schema", (deployment) => {
    const out: string[] = [];
    const code = renderCommand(
      { root: project, stack: "examples", out: (l) => out.push(l), err: () => undefined },
      parseArgs([deployment, "--json"], flagSpec("render")),
    );
    expect(code).toBe(0);
    expect(renderSchema().parse(JSON.parse(out.join("\n"))).deployment).toBe(deployment);
  });
});
