/**
 * The operator's week (issue 26), through the real Pulumi CLI on the simulated site, in order on one
 * site: an engine that hangs after it served is drift, and the restarts it causes are bounded by
 * sm121:liveness; a node protected after its deployment served is protected in the state; a node
 * the look cannot reach is unknown, not drift: the preview fails with the node, the reason, the
 * stack-file place and the fix, and the up leaves that deployment alone while another is served.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { unpack } from "../../src/providers/packed";
import { json, sm121, tableRows } from "../cli-helpers";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { killNodeSshd, nodeProcesses, restartNodeSshd } from "../site/faults";
import { setEngineBehaviour, type SimNode } from "../site/site";
import { answerIn, modelsIn } from "../helpers/json";

const AT = allocate(__filename);

const recipe = (served: string, maxLen: number) => `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "${served}"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = 8000
args = ["--max-model-len", "${maxLen}"]
[readiness]
timeout_s = 30
`;

const HUNG = "w1: answers /v1/models but no token in 2 s";

interface Outcome {
  status: string;
  held?: boolean;
  failure?: string;
  restarts?: Array<{ at: string; causes: unknown[] }>;
}

interface Engine {
  urn: string;
  inputs?: Record<string, unknown>;
  outputs?: { __bundle?: string; outcome?: Outcome };
}

describe.sequential("the operator's week", () => {
  let e: E2E;
  let w1: SimNode;
  let w2: SimNode;
  let w3: SimNode;
  const sh = async (n: SimNode, script: string) => (await sshScript(e.site, n, script)).stdout.trim();
  const started = (n: SimNode, name: string) => sh(n, `docker inspect -f '{{.State.StartedAt}}' sm121-${name}-0`);
  /** w3 is protected from the start; w2 when `protectW2`. */
  const stack = (protectW2: boolean) =>
    [
      "config:",
      `  sm121:knownHosts: ${e.site.knownHosts}`,
      "  sm121:minMemAvailableGiB: 1",
      "  sm121:readyGraceS: 0",
      "  sm121:liveness: { timeout: 2, maxRestarts: 2, windowS: 3600 }",
      nodesYaml(e.site, (n) => (n.name === "w3" || (n.name === "w2" && protectW2) ? "      protected: true" : "")),
      "  sm121:deployments:",
      "    - { name: live, recipe: live, nodes: [w1] }",
      "    - { name: other, recipe: other, nodes: [w2] }",
      "    - { name: far, recipe: far, nodes: [w3] }",
      "",
    ].join("\n");
  const engine = async (name: string): Promise<Engine> => {
    const s = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as { deployment: { resources: Engine[] } };
    const r = s.deployment.resources.find((x) => x.urn.endsWith(`::${name}-engine`));
    if (r === undefined) throw new Error(`no ${name}-engine in the state`);
    return r;
  };
  const chat = (n: SimNode) => {
    const body = '{"messages":[{"role":"user","content":"hi"}],"max_tokens":1}';
    const url = `http://${n.ip}:8000/v1/chat/completions`;
    return sh(n, `curl -s -m 10 -H 'Content-Type: application/json' -d '${body}' ${url}`);
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "week",
      nodes: ["w1", "w2", "w3"],
      ...AT.site(),
      recipes: Object.fromEntries(["live", "other", "far"].map((r) => [`${r}.toml`, recipe(r, 8192)])),
      config: () => "",
    });
    [w1, w2, w3] = e.site.nodes as [SimNode, SimNode, SimNode];
    e.writeStack(stack(false));
    const up = await e.up({ SM121_ALLOW_PROTECTED: "w3" });
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 240_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("a hung engine (/v1/models but no token) is drift in the plan, hung in status, restarted by an up", async () => {
    const before = await started(w1, "live");
    setEngineBehaviour(w1, { mode: "hung" });
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    // The drift input holds the finding in English words, never a message key; the plan's line says it.
    expect(preview.stdout).toMatch(/\+ \[0\]: "w1: answers \/v1\/models but no token in 2 s/);
    expect(preview.stdout).not.toContain("serve.look");
    expect(preview.all).toMatch(
      new RegExp(
        `sm121: live: restarts w1: ${HUNG.replaceAll("/", "\\/")} and its request counters stood still \\(\\d+\\)`,
      ),
    );

    const status = await sm121(e, ["status", "--json"]);
    expect(status.code).toBe(1);
    type Report = { deployments: Array<{ deployment: string; nodes: Array<{ live: unknown; drift: unknown }> }> };
    const entry = (json(status) as Report).deployments.find((d) => d.deployment === "live")?.nodes[0];
    expect(entry).toMatchObject({ live: { verdict: "hung", timeoutS: 2 }, drift: { kind: "hung" } });
    // A dead engine is "down", a hung one "hung": the two read apart.
    await sh(w2, "docker stop sm121-other-0 >/dev/null");
    const state = async (node: string) => {
      return tableRows((await sm121(e, ["status", "--node", node])).stdout, "NODE")[0]?.["STATE"];
    };
    expect(await state("w1")).toBe("hung: running sm121-live-0, answers /v1/models, no token in 2 s");
    expect(await state("w2")).toBe("down: not running sm121-other-0");
    // What to run: nothing starts a stopped engine by itself, not even a reboot.
    expect((await sm121(e, ["status", "--node", "w2"])).stdout).toContain(
      "other is down on w2: nothing starts it again by itself (after a reboot neither); " +
        "sm121 up (or pulumi up) starts it, and sm121 logs other shows why it stopped",
    );

    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await started(w1, "live")).not.toBe(before);
    expect(answerIn(await chat(w1))).toBeTruthy();
    const causes = (await engine("live")).outputs?.outcome?.restarts?.map((r) => r.causes);
    // The cause the state counts is the look's message, not its words.
    const hangs = { key: "serve.look.noToken", args: expect.objectContaining({ node: "w1", timeoutS: 2 }) as unknown };
    expect(causes).toEqual([[hangs]]);
  }, 360_000);

  it("bounds a hang's restarts: after maxRestarts in windowS, failed, left alone until SM121_RESTART=1", async () => {
    setEngineBehaviour(w1, { mode: "hung" });
    const second = await e.up();
    expect(second.code, second.all).toBe(0);
    expect((await engine("live")).outputs?.outcome?.restarts).toHaveLength(2);

    setEngineBehaviour(w1, { mode: "hung" });
    const hung = await started(w1, "live");
    const third = await e.up();
    expect(third.code).not.toBe(0);
    const held = "deployment live restarted 2 times in the last 3600 s for its health (sm121:liveness maxRestarts 2); ";
    expect(third.all).toContain(`${held}the last causes: ${HUNG}`);
    const way = "sm121 marks it failed and leaves it alone: find the cause (`sm121 logs live`), ";
    expect(third.all).toContain(`${way}then run \`SM121_RESTART=1 pulumi up\` to start it again`);
    expect(await started(w1, "live")).toBe(hung);
    expect((await engine("live")).outputs?.outcome).toMatchObject({ status: "failed", held: true });

    const fourth = await e.up();
    expect(fourth.code, fourth.all).toBe(0);
    expect(fourth.all).toContain("sm121: live: left alone, failed: deployment live restarted 2 times");
    expect(await started(w1, "live")).toBe(hung);

    // SM121_RESTART=1 restarts every deployment of the run: far's protected node needs its allowance.
    const retry = await e.up({ SM121_RESTART: "1", SM121_ALLOW_PROTECTED: "w3" });
    expect(retry.code, retry.all).toBe(0);
    expect(await started(w1, "live")).not.toBe(hung);
    const outcome = (await engine("live")).outputs?.outcome;
    expect(outcome?.status).toBe("serving");
    expect(outcome?.held).toBeUndefined();
    expect(outcome?.restarts).toBeUndefined();
  }, 480_000);

  it("records a node protected after its deployment served, restarting nothing; destroy then refuses it", async () => {
    const before = await started(w2, "other");
    e.writeStack(stack(true));
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain("+ serves on w2 (rank 0, protected)");
    expect(preview.all).toContain(
      "sm121: other: restarts nothing: w2: protected false -> true (recorded; nothing restarts for it)",
    );
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await started(w2, "other")).toBe(before);
    const stored = unpack<{ nodes: Array<{ protected: boolean }> }>((await engine("other")).outputs?.__bundle ?? "");
    expect(stored.nodes[0]?.protected).toBe(true);

    const destroy = await e.destroy();
    expect(destroy.code).not.toBe(0);
    expect(destroy.all).toContain(
      "node w2 is protected and this run would stop other on it; run with SM121_ALLOW_PROTECTED=w2",
    );
    expect(await started(w2, "other")).toBe(before);
    expect(await sh(w1, "docker ps --format '{{.Names}}'")).toBe("sm121-live-0");
  }, 360_000);

  const unreachable = "an unreachable node is unknown, not drift: the plan leaves it as it is; the up serves the rest";
  it(`${unreachable}, then fails`, async () => {
    const farEngine = nodeProcesses(w3, /fake-engine/);
    expect(farEngine).toHaveLength(1);
    const farBefore = (await engine("far")).outputs;
    const otherBefore = await started(w2, "other");
    writeFileSync(join(e.dir, "recipes", "other.toml"), recipe("other", 4096));
    killNodeSshd(e.site, w3);
    // The place of w3's ssh block in the stack file.
    const line =
      readFileSync(join(e.dir, "Pulumi.sim.yaml"), "utf8")
        .split("\n")
        .findIndex((l) => l === "    w3:") + 2;
    const at = `${w3.ip}:${w3.sshPort}`;
    const place = `Pulumi.sim.yaml:${line}:7: sm121:nodes.w3.ssh: w3 unreachable:`;
    const fix = "check that sshd runs on w3 and listens on ssh.port";
    const reason = `${place} connection to ${e.site.user}@${at} refused (connect ECONNREFUSED ${at}); ${fix}`;
    const unknown = "deployment far is unknown: its nodes could not be looked at;";
    const next =
      "when w3 can be reached again, run sm121 up (or pulumi up) again; " +
      "to serve far now without w3, give it other nodes in Pulumi.sim.yaml (sm121:deployments)";

    // The plan says what it leaves as it is, and why, and passes: an up goes on with the rest.
    const preview = await e.preview({ SM121_ALLOW_PROTECTED: "w2" });
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).toContain(
      `${unknown} this plan leaves it as it is (nothing restarts or stops there); ` +
        "an up serves the other deployments, then fails for this one:",
    );
    expect(preview.all).toContain(reason);
    expect(preview.all).toContain(next);
    expect(preview.all).toContain(`sm121: far: unknown: ${reason}; this run leaves far as it is (no restart, no stop)`);
    // No restart is planned for it and w3, protected, refuses nothing.
    expect(preview.all).not.toContain("node w3 is protected");
    expect(preview.all).not.toMatch(/restarts w3/);

    // `pulumi up` previews first, then serves every other deployment, and fails at the end naming far.
    const up = await e.pulumi.run(["up", "--yes"], { env: { SM121_ALLOW_PROTECTED: "w2" } });
    expect(up.code).not.toBe(0);
    expect(up.all).toContain(`${unknown} this up left it as it was and the other deployments went on:`);
    expect(up.all).toContain(reason);
    expect(up.all).toContain(next);
    // other went on in the same up: restarted with its new recipe, and serving.
    expect(await started(w2, "other")).not.toBe(otherBefore);
    expect(modelsIn(await sh(w2, `curl -s http://${w2.ip}:8000/v1/models`))[0]?.max_model_len).toBe(4096);
    expect((await engine("other")).outputs?.outcome?.status).toBe("serving");
    // far: its engine untouched, its state's outputs as they were (the real CLI's state, read back).
    expect(nodeProcesses(w3, /fake-engine/)).toEqual(farEngine);
    // (A secret is encrypted again with a nonce of its own at each save: its ciphertext differs.)
    const plain = (o: unknown): unknown =>
      JSON.parse(JSON.stringify(o).replace(/"ciphertext":"[^"]*"/g, '"ciphertext":""'));
    expect(plain((await engine("far")).outputs)).toEqual(plain(farBefore));

    await restartNodeSshd(e.site, w3);
    // A failing login is said the same way, with the reason and the fix for it.
    const good = readFileSync(join(e.dir, "Pulumi.sim.yaml"), "utf8");
    const ssh = `ssh: { host: ${w3.ip}, port: ${w3.sshPort}, user:`;
    e.writeStack(stack(true).replace(`${ssh} ${e.site.user} }`, `${ssh} nobody-here }`));
    const login = await e.preview({ SM121_ALLOW_PROTECTED: "w2" });
    expect(login.code, login.all).toBe(0);
    expect(login.all).toContain(
      [
        `${place} the login as nobody-here@${at} was refused (All configured authentication methods failed);`,
        "check ssh.user, and that a key sm121 logs in with (sm121:sshPrivateKey, ssh-agent, then ~/.ssh/config's",
        "IdentityFile or ~/.ssh/id_*; sm121 doctor names them) is in that user's ~/.ssh/authorized_keys on w3",
      ].join(" "),
    );
    writeFileSync(join(e.dir, "Pulumi.sim.yaml"), good);
    const back = await e.up();
    expect(back.code, back.all).toBe(0);
    expect(back.all).not.toMatch(/restarts w3|updated/);
    expect(nodeProcesses(w3, /fake-engine/)).toEqual(farEngine);
  }, 480_000);
});
