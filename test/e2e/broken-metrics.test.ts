/**
 * An engine whose /metrics holds counters and a gauge that are no finite numbers (NaN, +Inf, as
 * Prometheus' format allows), through the real Pulumi CLI and sm121 on the simulated site: the
 * plan-time look reads them as unknown and holds (a plan without an error, no word of another
 * sm121 release), a hang is found without them and repaired, SM121_RESTART=1 restarts the engine,
 * and `sm121 status` says unknown for what it cannot read and the rest as it is.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { json, sm121 } from "../cli-helpers";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { setEngineBehaviour, type EngineBehaviour, type SimNode } from "../site/site";

const AT = allocate(__filename);

const RECIPE = `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "odd"
image = "nvcr.io/nvidia/vllm:25.10-py3"
port = 8000
[readiness]
timeout_s = 30
`;
const BROKEN: EngineBehaviour["metricValues"] = {
  "vllm:request_success_total": "NaN",
  "vllm:generation_tokens_total": "+Inf",
  "vllm:num_requests_running": "NaN",
};
const MISMATCH = "run the same sm121 release on every machine";

describe.sequential("an engine whose /metrics holds NaN and +Inf", () => {
  let e: E2E;
  let node: SimNode;
  const started = async () =>
    (await sshScript(e.site, node, "docker inspect -f '{{.State.StartedAt}}' sm121-odd-0")).stdout.trim();

  beforeAll(async () => {
    e = await e2eProject({
      name: "nanmetrics",
      nodes: ["nm1"],
      ...AT.site(),
      recipes: { "odd.toml": RECIPE },
      config: () => "",
    });
    [node] = e.site.nodes as [SimNode];
    e.writeStack(
      [
        "config:",
        `  sm121:knownHosts: ${e.site.knownHosts}`,
        "  sm121:minMemAvailableGiB: 1",
        "  sm121:readyGraceS: 0",
        "  sm121:liveness: { timeout: 2 }",
        nodesYaml(e.site),
        "  sm121:deployments:",
        "    - { name: odd, recipe: odd, nodes: [nm1] }",
        "",
      ].join("\n"),
    );
    setEngineBehaviour(node, { metricValues: BROKEN });
    const up = await e.up();
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
  }, 240_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("plans with nothing to do: the look reads the counters as unknown and holds", async () => {
    const metrics = await sshScript(e.site, node, `curl -s http://${node.ip}:8000/metrics`);
    expect(metrics.stdout).toMatch(/^vllm:request_success_total\{.*\} NaN$/m);
    expect(metrics.stdout).toMatch(/^vllm:generation_tokens_total\{.*\} \+Inf$/m);
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    expect(preview.all).not.toContain(MISMATCH);
    expect(preview.all).not.toMatch(/unknown|restarts/);
  });

  it("finds a hang without the counters, and the up repairs it", async () => {
    const before = await started();
    setEngineBehaviour(node, { mode: "hung", metricValues: BROKEN });
    const preview = await e.preview();
    expect(preview.code, preview.all).toBe(0);
    // No "and its request counters stood still": what they said is unknown.
    expect(preview.all).toMatch(/sm121: odd: restarts nm1: nm1: answers \/v1\/models but no token in 2 s(?! and)/);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(await started()).not.toBe(before);
  });

  it("restarts with SM121_RESTART=1", async () => {
    const before = await started();
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code, up.all).toBe(0);
    expect(up.all).not.toContain(MISMATCH);
    expect(await started()).not.toBe(before);
  });

  it("sm121 status: what is no finite number is unknown, the rest as the engine says it", async () => {
    const status = await sm121(e, ["status", "--json"]);
    type Report = { deployments: Array<{ nodes: Array<{ load: Record<string, unknown> }> }> };
    const load = (json(status) as Report).deployments[0]?.nodes[0]?.load;
    expect(load).toMatchObject({ measured: true, running: null, waiting: 0, generationTokensPerS: null });
    const table = await sm121(e, ["status"]);
    expect(table.stdout).toMatch(/^\s*odd\s+nm1\s+-\s+0\s/m);
  });
});
