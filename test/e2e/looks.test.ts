/**
 * The plan-time looks that test/plan-site.test.ts plans over, recorded from the simulated site:
 * one `pulumi up` serves two replicas of a model with a spare node and a deployment on a protected
 * node, then the program's own look (src/programLook.ts) is taken for each scenario's site (the
 * stack as served, engines and nodes down, a deployment gone, a node moved, another stack's run,
 * images that differ, an engine that would refuse, a recipe that cannot fit). Each scenario's stack
 * and look are kept in test/fixtures/looks/ with this run's paths, addresses and image IDs spelled
 * the same every run; `UPDATE_GOLDEN=1` records them again. Otherwise this test holds the
 * recordings to the look as it is now: the same findings (their message keys), for the same
 * deployments and nodes.
 */
import { copyFileSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadProject } from "../../src/project";
import { lookSite } from "../../src/programLook";
import type { RunInputs } from "../../src/plan/inputs";
import type { SiteLook } from "../../src/plan/types";
import { Dialer } from "../../src/remote";
import { expectGolden } from "../helpers/golden";
import { e2eProject, type E2E } from "../helpers/project";
import { allocate } from "../site/alloc";
import { buildImage } from "../site/exec";
import { killNodeSshd, nodeProcesses } from "../site/faults";
import type { SimNode } from "../site/site";
import { LOOKS, RECIPES, SCENARIOS, skeleton, type Scenario } from "../helpers/looks";

const AT = allocate(__filename);
const IMAGE = "nvcr.io/nvidia/vllm:26.01-py3";

describe.sequential("the looks planSite is tested over", () => {
  let e: E2E;
  const node = (name: string) => e.site.nodes.find((n) => n.name === name) as SimNode;

  /**
   * This run's paths, addresses, ports and hashes (image IDs, files' sha256), spelled the same every
   * run: each hash by the order of its first appearance.
   */
  function normalized(text: string): string {
    let out = text.replaceAll(e.pulumi.env["PULUMI_BACKEND_URL"] ?? "file://", "file:///state");
    out = out.replaceAll(e.site.dir, "/site").replaceAll(e.dir, "/project");
    for (const n of e.site.nodes) out = out.replaceAll(n.ip, `10.0.0.${n.name.slice(1)}`);
    const hashes = new Map<string, string>();
    out = out.replace(/\b[0-9a-f]{64}\b/g, (h) => {
      if (!hashes.has(h)) hashes.set(h, String(hashes.size + 1).padEnd(64, "0"));
      return hashes.get(h) ?? h;
    });
    out = out
      .replaceAll(`user: ${e.site.user}}`, "user: ops}")
      .replaceAll(`user: ${e.site.user} }`, "user: ops }")
      .replaceAll(`${e.site.user}@10.0.0.`, "ops@10.0.0.");
    return out.replace(/\b(port: )2222\b/g, "$122").replace(/(10\.0\.0\.\d+):2222\b/g, "$1:22");
  }

  async function record(s: Scenario): Promise<void> {
    const stack = s.name;
    const text = [
      "config:",
      `  sm121:knownHosts: ${e.site.knownHosts}`,
      "  sm121:minMemAvailableGiB: 1",
      "  sm121:readyGraceS: 0",
      nodesBlock(),
      s.config,
      "",
    ].join("\n");
    writeFileSync(join(e.dir, `Pulumi.${stack}.yaml`), text);
    const project = loadProject(e.dir, stack);
    const dial = new Dialer({
      knownHosts: e.site.knownHosts,
      hostKeys: "strict",
      privateKey: readFileSync(e.site.clientKey, "utf8"),
      dialAttempts: 1,
    });
    const refuse = (m: string) => new Error(m);
    const look = await lookSite(project, runOf(s), dial, refuse).finally(() => dial.close());
    const recorded = `${normalized(JSON.stringify(look, null, 2))}\n`;
    const file = join(LOOKS, `${s.name}.look.json`);
    expectGolden(join(LOOKS, `Pulumi.${s.name}.yaml`), normalized(text), "test/e2e/looks.test.ts");
    if (process.env["UPDATE_GOLDEN"] === "1") writeFileSync(file, recorded);
    const names = [...e.site.nodes.map((n) => n.name), ...Object.keys(look.nodes.drift)];
    const kept = JSON.parse(readFileSync(file, "utf8")) as SiteLook;
    expect(skeleton(JSON.parse(recorded) as SiteLook, names)).toEqual(skeleton(kept, names));
  }

  function runOf(s: Scenario): RunInputs {
    const backend = e.pulumi.env["PULUMI_BACKEND_URL"] ?? "";
    return {
      stack: e.stack,
      dryRun: true,
      owner: { project: "sm121", stack: s.owner ?? e.stack, backend },
      allow: { protected: [], experimental: false, restart: false, takeover: [] },
      down: s.down ?? [],
      unfit: [],
      rollAll: false,
      secrets: { apiKey: false, hfToken: false },
    };
  }

  function nodesBlock(): string {
    const text = readFileSync(join(e.dir, "Pulumi.sim.yaml"), "utf8");
    const start = text.indexOf("  sm121:nodes:");
    const end = text.indexOf("  sm121:gateway:");
    return text.slice(start, end).trimEnd();
  }

  beforeAll(async () => {
    e = await e2eProject({
      name: "looks",
      nodes: ["n1", "n2", "n3", "n4", "n5"],
      ...AT.site(),
      recipes: RECIPES,
      nodeExtra: (n) => (n.name === "n4" ? "      protected: true" : ""),
      config: () => SCENARIOS.steady.config,
      // The recorded stacks (fixtures/looks/Pulumi.*.yaml) keep the tripwire's default floor.
      memFloorGiB: null,
    });
    const up = await e.up({ SM121_ALLOW_PROTECTED: "n4" });
    if (up.code !== 0) throw new Error(`the first up failed:\n${up.all}`);
    mkdirSync(join(LOOKS, "recipes"), { recursive: true });
    for (const f of readdirSync(join(e.dir, "recipes")).filter((f) => f in RECIPES))
      copyFileSync(join(e.dir, "recipes", f), join(LOOKS, "recipes", f));
  }, 400_000);
  afterAll(async () => {
    await e?.stop();
  });

  it("records the look of the stack as it serves: every deployment steady", () => record(SCENARIOS.steady));

  for (const s of [SCENARIOS.gone, SCENARIOS.moved, SCENARIOS.foreign, SCENARIOS.fatal, SCENARIOS.unfit]) {
    it(`records the look of ${s.name}: ${s.what}`, () => record(s));
  }

  it("records the look of images: a deployment's image differs between its nodes", async () => {
    // Another build of the image under the same name on n5 (built there: an ID of its own).
    await buildImage(e.site, node("n5"), IMAGE, `FROM ${IMAGE}\nLABEL sm121.test=looks`);
    await record(SCENARIOS.images);
  });

  it("records the look of faults: an engine stopped, a node of a replica and an unused node down", async () => {
    for (const p of nodeProcesses(node("n4"), /fake-engine/)) process.kill(Number(p.split(" ")[0]), "SIGKILL");
    killNodeSshd(e.site, node("n2"));
    killNodeSshd(e.site, node("n5"));
    await record(SCENARIOS.faults);
  });
});
