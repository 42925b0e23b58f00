/**
 * sm121's words in the operator's language through the real Pulumi CLI: the provider process that
 * Pulumi starts inherits SM121_LANG, so a refusal and the plan's reasons come in German while
 * Pulumi's own words stay Pulumi's. The language is never part of what the plan compares: after an
 * up under English, a preview under German plans no change, and an up under German changes nothing.
 * A failed up records its failure as a message key (no words of any language): two failed ups, one
 * under Russian and one under English, leave the same failure and the same gateway file, and the
 * next plan says "the last up left it failed" in the reader's language.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { smallVllm } from "../helpers/spec";
import { e2eProject, nodesYaml, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import type { SimNode, SimSite } from "../site/site";

const AT = allocate(__filename);

const recipe = (maxLen: number) => smallVllm(30, maxLen);

function stack(site: SimSite): string {
  const gateway = `  sm121:gateway: { path: ${site.dir}/gateway-backends.json, format: sm121 }`;
  const nodes = nodesYaml(site, () => "      protected: true");
  return [
    "config:",
    `  sm121:knownHosts: ${site.knownHosts}`,
    "  sm121:minMemAvailableGiB: 1",
    "  sm121:readyGraceS: 0",
    "  sm121:memTimeoutS: 3",
    gateway,
    nodes,
    "  sm121:deployments:",
    "    - { name: guarded, recipe: small, nodes: [spark1] }",
    "",
  ].join("\n");
}

const EN = { SM121_LANG: "en", LANG: "en_US.UTF-8" };
const DE = { SM121_LANG: "de", LANG: "de_DE.UTF-8" };
const RU = { SM121_LANG: "ru", LANG: "ru_RU.UTF-8" };
/** The memory gate no node passes (the range's top): the serve fails at its gate, after the stop. */
const NO_MEMORY = { SM121_ALLOW_PROTECTED: "spark1", SM121_MIN_MEM_GIB: "1024" };

interface Failure {
  key: string;
  args?: { step?: { key: string }; detail?: string };
}

describe.sequential("the provider's words in German, Pulumi's in English", () => {
  let e: E2E;
  let n: SimNode;
  /** What the plan compares and what the last up found, as stored (secrets are encrypted afresh each run). */
  const engineState = async () => {
    interface Stored {
      plan?: string;
      drift?: unknown[];
      __bundle?: string;
      outcome?: { status?: string; failure?: Failure };
    }
    type Resource = { type: string; inputs?: Stored; outputs?: Stored };
    const state = JSON.parse((await e.pulumi.run(["stack", "export"])).stdout) as {
      deployment: { resources: Resource[] };
    };
    const engine = state.deployment.resources.find((r) => r.type.endsWith(":EngineDeployment"));
    return {
      plan: engine?.inputs?.plan,
      drift: engine?.inputs?.drift,
      bundle: engine?.inputs?.__bundle,
      outcome: engine?.outputs?.outcome,
    };
  };

  beforeAll(async () => {
    e = await e2eProject({
      name: "lang",
      nodes: ["spark1"],
      ...AT.site(),
      config: () => "",
      recipes: { "small.toml": recipe(8192) },
    });
    n = e.site.nodes[0] as SimNode;
    e.writeStack(stack(e.site));
    const up = await e.up({ ...EN, SM121_ALLOW_PROTECTED: "spark1" });
    expect(up.code, up.all).toBe(0);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("plans no change when only the language changes, and an up under German changes nothing", async () => {
    const before = await engineState();
    for (const env of [EN, DE]) {
      const preview = await e.pulumi.run(["preview", "--diff", "--expect-no-changes"], { env });
      expect(preview.code, preview.all).toBe(0);
      expect(preview.all).toMatch(/Resources:\n\s+\d+ unchanged\n/);
    }
    const up = await e.up(DE);
    expect(up.code, up.all).toBe(0);
    // Every resource unchanged: nothing updated, created, replaced or deleted.
    expect(up.all).toMatch(/Resources:\n\s+\d+ unchanged\n/);
    const after = await engineState();
    expect(after.plan).toMatch(/^vllm on docker, recipe small/);
    expect(after).toEqual(before);
  });

  it("refuses a restart on the protected node in German, inside Pulumi's English", async () => {
    writeFileSync(join(e.dir, "recipes", "small.toml"), recipe(16384));
    const started = (await sshScript(e.site, n, "docker inspect -f '{{.State.StartedAt}}' $(docker ps -q)")).stdout;
    const up = await e.up(DE);
    expect(up.code).not.toBe(0);
    const refusal =
      "Knoten spark1 ist geschützt, und dieser Lauf würde guarded darauf neu starten; " +
      "starten Sie mit SM121_ALLOW_PROTECTED=spark1, um es zu erlauben";
    expect(up.all).toContain(refusal);
    expect(up.all).not.toContain("is protected and this run would restart");
    // Pulumi's own words: its diagnostics heading and its summary stay Pulumi's.
    expect(up.all).toMatch(/Diagnostics:/);
    expect(up.all).toMatch(/error: /);
    expect((await sshScript(e.site, n, "docker inspect -f '{{.State.StartedAt}}' $(docker ps -q)")).stdout).toBe(
      started,
    );
  });

  it("says the plan's reason in German, and the same change in English under English", async () => {
    const de = await e.preview({ ...DE, SM121_ALLOW_PROTECTED: "spark1" });
    expect(de.code, de.all).toBe(0);
    expect(de.all).toContain("startet spark1 neu: das gerenderte Bündel hat sich geändert (der Start auf spark1)");
    // The change itself is the same bytes under either language: the plan's lines are English state.
    expect(de.all).toMatch(/- --max-model-len 8192\n\s+\+ --max-model-len 16384\n/);
    const en = await e.preview({ ...EN, SM121_ALLOW_PROTECTED: "spark1" });
    expect(en.all).toMatch(/restarts spark1: the rendered bundle changed \(the launch on spark1\)/);
    const lines = (s: string) =>
      s
        .split("\n")
        .filter((l) => /^\s+[-+~] /.test(l))
        .join("\n");
    expect(lines(de.stdout)).toBe(lines(en.stdout));
    expect(readFileSync(join(e.dir, "recipes", "small.toml"), "utf8")).toContain("16384");
  });

  it("records a failure as a key, not words: the same state and gateway file under Russian and English", async () => {
    const gatewayFile = join(e.site.dir, "gateway-backends.json");
    const ru = await e.up({ ...RU, ...NO_MEMORY });
    expect(ru.code, ru.all).not.toBe(0);
    const stored = (await engineState()).outcome;
    expect(stored?.status).toBe("failed");
    expect(stored?.failure).toMatchObject({ key: "state.stepFailed", args: { step: { key: "state.step.start" } } });
    // What sm121 records holds no word of the operator's language: the step is a key, the node's
    // account after it is kept in English whatever the run spoke.
    expect(JSON.stringify(stored)).not.toMatch(/[\u0400-\u04ff]/);
    expect(stored?.failure?.args?.detail).toMatch(/exited with code/);
    const fileRu = readFileSync(gatewayFile, "utf8");
    expect(fileRu).toContain('"status": "failed"');
    const en = await e.up({ ...EN, ...NO_MEMORY });
    expect(en.code, en.all).not.toBe(0);
    const again = (await engineState()).outcome;
    // The same failure, recorded under English, is the same bytes (the runs' timings and restarts differ).
    expect([again?.status, again?.failure]).toEqual([stored?.status, stored?.failure]);
    expect(readFileSync(gatewayFile, "utf8")).toBe(fileRu);
  });

  it("says the restart reason of a recorded failure in Russian in the plan, and in English under English", async () => {
    const ru = await e.preview({ ...RU, SM121_ALLOW_PROTECTED: "spark1" });
    expect(ru.code, ru.all).toBe(0);
    // The look's drift (the stopped engine) and sm121's own reason, both said in Russian.
    const failed = "прошлый up оставил его в состоянии «сбой»";
    expect(ru.all).toMatch(
      new RegExp(`sm121: guarded: перезапускает spark1: spark1: движок не запущен \\(.*${failed}`),
    );
    // sm121's own lines speak Russian; the diff's drift input is the findings' English words whatever the
    // run speaks (the same bytes in the state for every operator).
    const ours = ru.all
      .split("\n")
      .filter((l) => l.startsWith("sm121:"))
      .join("\n");
    expect(ours).not.toContain("the last up left it failed");
    expect(ours).not.toContain("the engine is not running");
    expect(ru.stdout).toMatch(/\+ \[0\]: "spark1: the engine is not running/);
    const en = await e.preview({ ...EN, SM121_ALLOW_PROTECTED: "spark1" });
    expect(en.all).toMatch(
      /sm121: guarded: restarts spark1: spark1: the engine is not running \(.*the last up left it failed/,
    );
    // The up under Russian serves again, and its state is the same whatever the language.
    const up = await e.up({ ...RU, SM121_ALLOW_PROTECTED: "spark1" });
    expect(up.code, up.all).toBe(0);
    expect((await engineState()).outcome?.status).toBe("serving");
    const preview = await e.pulumi.run(["preview", "--diff", "--expect-no-changes"], { env: EN });
    expect(preview.code, preview.all).toBe(0);
  });
});
