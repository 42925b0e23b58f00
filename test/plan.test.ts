/**
 * The plan text of a deployment (render/plan): flags whole, one a line; facts every node shares
 * once, the others under the node's name; secret keys masked; and the packed bundle that travels
 * beside it comes back as it went (providers/packed, providers/engineWire).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { fromWire, oldsFromWire } from "../src/providers/engineWire";
import type { EngineWire } from "../src/providers/wire";
import { STATE_VERSIONS } from "../src/providers/stateVersion";
import { pack } from "../src/providers/packed";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { argvFacts, deploymentPlan } from "../src/render/plan";
import type { DeploymentBundle } from "../src/render/types";
import { say } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const bundle = (name: string): DeploymentBundle => {
  const b = bundles.find((x) => x.deployment === name);
  if (b === undefined) throw new Error(`no deployment ${name}`);
  return b;
};

describe("the plan text", () => {
  it("reads an argv as the command and one option a line, with its value", () => {
    expect(
      argvFacts([
        "vllm",
        "serve",
        "Qwen/Qwen3-32B",
        "--max-model-len",
        "32768",
        "--enable-prefix-caching",
        "--config=x.yaml",
        "--json",
        '{"a": 1}',
        "stray",
      ]),
    ).toEqual([
      "command vllm serve Qwen/Qwen3-32B",
      "--max-model-len 32768",
      "--enable-prefix-caching",
      "--config=x.yaml",
      `--json '{"a": 1}'`,
      "arg stray",
    ]);
  });

  it("states what both ranks share once and the rest under each node", () => {
    const lines = deploymentPlan(bundle("qwen3-32b-vllm-tp2")).split("\n");
    expect(lines[0]).toBe("vllm on docker, recipe qwen3-32b-vllm-tp2 (recipes/qwen3-32b-vllm-tp2.toml)");
    expect(lines).toContain("--max-model-len 32768");
    expect(lines.filter((l) => l.includes("--max-model-len"))).toHaveLength(1);
    expect(lines).toContain("vllm-1 --node-rank 0");
    expect(lines).toContain("vllm-2 --node-rank 1");
    expect(lines).toContain("vllm-2 --headless");
    expect(lines.at(-2)).toMatch(/^bundle sha256 [0-9a-f]{12} \(the diff key\)$/);
  });

  it("lists a script recipe's .env keys and file with its sha256 prefix, and masks a secret key", () => {
    const b = bundle("qwen38-flash-best");
    const text = deploymentPlan(b);
    expect(text).toContain("\n.env MAX_NUM_SEQS=4\n");
    expect(text).toContain(
      `\nfile /home/ops/spark-recipes/qwen38-flash/.env sha256 ${b.nodes[0]?.files[0]?.sha256.slice(0, 12) ?? "?"}\n`,
    );
    const withSecret = {
      ...b,
      nodes: b.nodes.map((n) => ({ ...n, envKeys: { ...n.envKeys, HF_TOKEN: "hf_do_not_show" } })),
    };
    expect(deploymentPlan(withSecret)).toContain("\n.env HF_TOKEN=(secret)\n");
    expect(deploymentPlan(withSecret)).not.toContain("hf_do_not_show");
  });

  it("never starts as something Pulumi's display would read as YAML or JSON", () => {
    for (const b of bundles) expect(deploymentPlan(b).split("\n")[0]).toMatch(/^[a-z0-9]+ on [a-z]+, recipe [^:]*$/);
  });
});

describe("the stored form", () => {
  const b = bundle("qwen3-32b-vllm-tp2");
  const run = {
    allow: { protected: [], experimental: false, restart: false },
    preflight: false,
    findings: { fatal: [], warnings: [] },
  };
  const connection = { knownHosts: "~/.ssh/known_hosts", hostKeys: "strict" as const };

  it("unpacks the bundle as it was packed", () => {
    const wire: EngineWire = {
      deployment: b.deployment,
      plan: deploymentPlan(b),
      drift: [],
      secrets: {},
      connection,
      __bundle: pack(b),
      __run: run,
    };
    expect(fromWire(wire)).toEqual({ deployment: b.deployment, drift: [], secrets: {}, connection, bundle: b, ...run });
    // Stored at this build's version: nothing to upgrade.
    expect(oldsFromWire({ ...wire, stateVersion: STATE_VERSIONS.EngineDeployment })).toEqual(fromWire(wire));
  });

  it("reads an earlier release's nested state, and nothing from a create's empty olds", () => {
    const nested = { deployment: b.deployment, bundle: b, connection, secrets: {}, drift: [], ...run };
    const olds = oldsFromWire(nested);
    expect(olds).toMatchObject({ bundle: b, ...run });
    expect(say(olds.upgrade ?? { key: "state.recorded" }, "en")).toMatch(
      /from the unversioned form of version 1 to version 6/,
    );
    expect(oldsFromWire({})).toEqual({});
  });
});
