/**
 * An endpoint that takes no API key (gr8 and DGPP take none: docs/security.md) is said by the plan
 * in words when sm121:apiKey is set, is sent no key by the gateway file, listens only where the site
 * binds it (DGPP), and is refused at plan time under sm121:requireApiKey: true, at the deployment's
 * line with the fix. One rule (engines endpointKey) for every engine: a script recipe's words come
 * from it too.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { describe, expect, it } from "vitest";
import { gatewayModelOf } from "../src/plan/files";
import { endpointKey } from "../src/engines";
import { loadRecipes } from "../src/engines/recipes";
import { SpecErrors } from "../src/recipe/errors";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { gatewayFile } from "../src/gateway/file.render";
import { deploymentPlan, keyNote } from "../src/render/plan";
import type { DeploymentBundle } from "../src/render/types";
import { say } from "../src/text/messages";

const ROOT = join(__dirname, "..");
const FILE = join(__dirname, "fixtures", "sites", "examples.yaml");
const TEXT = readFileSync(FILE, "utf8");
const recipes = loadRecipes(join(ROOT, "recipes"), "recipes");
const site = parseSite("Pulumi.examples.yaml", "examples", TEXT);
const bundles = renderSite(site, recipes, { root: ROOT });
const byName = (name: string) => bundles.find((b) => b.deployment === name) as DeploymentBundle;
const gr8 = byName("glm53-full-tp4-gr8");
const dgpp = byName("qwen38-27b-nvfp4-dgpp");
const vllm = byName("qwen3-32b-vllm-tp2");
const script = byName("qwen38-flash-best");

describe("who holds an endpoint's key", () => {
  it("is sm121 for vLLM and SGLang, the node's .env for a script recipe, nobody for gr8 and DGPP", () => {
    expect(bundles.map((b) => [b.engine, b.deploy, endpointKey(b)])).toEqual(
      expect.arrayContaining([
        ["gr8", "docker", "none"],
        ["dgpp", "native", "none"],
        ["vllm", "docker", "sm121"],
        ["sglang", "tmux", "sm121"],
        ["vllm", "script", "node"],
      ]),
    );
  });
});

describe("a deployment whose engine takes no key, with sm121:apiKey set", () => {
  it("is said by its plan, in words, with its endpoint; a keyed one's plan says nothing of it", () => {
    const plan = deploymentPlan(gr8, { apiKey: true });
    expect(plan).toContain(
      "api key: gr8 takes no API key: the endpoint of glm53-full-tp4-gr8 at http://203.0.113.1:8100 answers " +
        "anyone who reaches it, although sm121:apiKey is set, and the gateway file sends it no key; keep its port " +
        "closed to all but the gateway, or refuse such deployments with sm121:requireApiKey: true",
    );
    expect(deploymentPlan(gr8, { apiKey: false })).not.toContain("api key:");
    expect(deploymentPlan(vllm, { apiKey: true })).not.toContain("api key:");
    // The script recipe's words, by the same rule (they were the up's warning alone before).
    expect(deploymentPlan(script, { apiKey: true })).toContain(
      "api key: sm121:apiKey is not written into the .env of script recipe qwen38-flash",
    );
    expect(say(keyNote(dgpp) ?? { key: "list.comma" }, "ru")).toContain("dgpp не принимает API-ключ");
  });

  it("is sent no key by the gateway file, LiteLLM's or llama-swap's; the others get it from the environment", () => {
    const models = [gr8, vllm].map((b) => gatewayModelOf(site, b));
    const lite = parse(gatewayFile("litellm", models, { apiKey: true }).text) as {
      model_list: Array<{ model_info: { id: string }; litellm_params: { api_key: string } }>;
    };
    const keys = Object.fromEntries(lite.model_list.map((e) => [e.model_info.id, e.litellm_params.api_key]));
    expect(keys["glm53-full-tp4-gr8-gr8-1"]).toBe("sm121-no-key");
    expect(keys["qwen3-32b-vllm-tp2-vllm-1"]).toBe("os.environ/SM121_API_KEY");
    expect(gatewayFile("litellm", models, { apiKey: true }).text).toContain(
      "# glm53-full-tp4-gr8: the engine takes no key, so the placeholder is sent there, never the key.",
    );
    const swap = parse(gatewayFile("llama-swap", models, { apiKey: true }).text) as {
      peers: Record<string, { apiKey?: string }>;
    };
    expect(swap.peers["glm53-full-tp4-gr8-gr8-1"]?.apiKey).toBeUndefined();
    expect(swap.peers["qwen3-32b-vllm-tp2-vllm-1"]?.apiKey).toBe("${env.SM121_API_KEY}");
  });

  it("listens only where the site binds it: DGPP's http host is rank 0's BIND, else its ip", () => {
    const json = (b: DeploymentBundle) =>
      JSON.parse(b.nodes[0]?.files.find((f) => f.path.endsWith(".json"))?.content ?? "{}") as {
        http: Record<string, unknown>;
      };
    expect(json(dgpp).http).toEqual({ host: "203.0.113.11", port: 18080 });
    const bound = parseSite(
      "Pulumi.examples.yaml",
      "examples",
      TEXT.replace(
        "      ip: 203.0.113.11\n      env: { HF_HOME: /srv/hf }",
        "      ip: 203.0.113.11\n      env: { HF_HOME: /srv/hf, BIND: 127.0.0.1 }",
      ),
    );
    const local = renderSite(bound, recipes, { root: ROOT }).find((b) => b.deployment === dgpp.deployment);
    expect(local === undefined ? undefined : json(local).http).toEqual({ host: "127.0.0.1", port: 18080 });
    expect(local?.nodes[0]?.api?.url).toBe("http://127.0.0.1:18080");
  });
});

describe("sm121:requireApiKey: true", () => {
  it("refuses each deployment whose engine takes no key, at its line, with the fix; the others pass", () => {
    const strict = parseSite(
      "Pulumi.examples.yaml",
      "examples",
      TEXT.replace("config:\n", "config:\n  sm121:requireApiKey: true\n"),
    );
    let thrown: unknown;
    try {
      renderSite(strict, recipes, { root: ROOT });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toBeInstanceOf(SpecErrors);
    expect((thrown as SpecErrors).errors.map((e) => e.message)).toEqual([
      "Pulumi.examples.yaml:91:7: sm121:deployments[0].recipe: deployment glm53-full-tp4-gr8 serves gr8, which " +
        "takes no API key: its /v1 would answer anyone who reaches it, and sm121:requireApiKey is true; serve " +
        "glm53-full-tp4-gr8 with an engine that takes a key (vllm or sglang), or set sm121:requireApiKey: false " +
        "to let it serve without one",
      "Pulumi.examples.yaml:93:7: sm121:deployments[1].recipe: deployment qwen38-27b-nvfp4-dgpp serves dgpp, " +
        "which takes no API key: its /v1 would answer anyone who reaches it, and sm121:requireApiKey is true; " +
        "serve qwen38-27b-nvfp4-dgpp with an engine that takes a key (vllm or sglang), or set " +
        "sm121:requireApiKey: false to let it serve without one",
    ]);
  });
});
