/**
 * What an engine answers or prints is hostile input: /v1/models is read with one schema by every
 * reader (one bad engine is one bad row of `sm121 status`, never the end of it), and `sm121 logs`
 * masks the secrets sm121 keeps on the node and the `api_key=` an engine prints (real SGLang
 * prints its api_key with its arguments at start, sgl-project/sglang#37457).
 */
import { spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { heldSecretsScript } from "../src/cli/logs";
import { healthOf } from "../src/cli/status";
import { healthText } from "../src/cli/table";
import { recordOfLine } from "../src/protocol";
import type { NodeBundle } from "../src/render/types";
import { maskSecrets } from "../src/serve/failure";
import { readModels } from "../src/serve/readiness";
import { testDir } from "./helpers/tmp";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const docker = bundles.find((x) => x.deployment === "qwen3-32b-vllm-tp2")?.nodes[0] as NodeBundle;

describe("an engine's /v1/models", () => {
  it("is a model list only when every entry is an object with a string id", () => {
    expect(readModels('{"object":"list","data":[{"id":"m","max_model_len":4096,"owned_by":"x"}]}')).toEqual({
      data: [{ id: "m", max_model_len: 4096 }],
    });
    expect(readModels('{"data":[{"id":"m","max_model_len":null}]}')).toEqual({ data: [{ id: "m" }] });
    for (const bad of ['{"data":[null]}', '{"data":[{"id":3}]}', '{"data":{}}', "[]", "null", "<html>", ""])
      expect(readModels(bad), bad).toBeUndefined();
  });

  it("that lists a null is one unhealthy row, which says so", () => {
    const h = healthOf(200, 12, '{"data":[null,{"id":"m"}]}');
    expect(h).toEqual({ checked: true, ok: false, httpCode: 200, latencyMs: 12, models: [], maxModelLen: null });
    expect(healthText(h)).toBe("HTTP 200, but no list of models");
    const ok = healthOf(200, 12, '{"data":[{"id":"m","max_model_len":8192}]}');
    expect(ok).toMatchObject({ ok: true, models: ["m"], maxModelLen: 8192 });
  });
});

describe("sm121 logs", () => {
  it("reads the secrets sm121 keeps on the node for the deployment, from its files", () => {
    const home = testDir("sm121-logs-held-");
    const state = join(home, ".sm121", "deployments", "d");
    mkdirSync(state, { recursive: true });
    writeFileSync(join(state, "secrets.env"), "HF_TOKEN=\"hf_tok1234\"\nAPI_KEY='it'\\''s-k3y'\nVLLM_API_KEY=\"\"\n");
    const nb: NodeBundle = { ...docker, stateDir: "~/.sm121/deployments/d" };
    const r = spawnSync("bash", ["-c", heldSecretsScript(nb)], { env: { HOME: home, PATH: "/usr/bin:/bin" } });
    expect(r.status, r.stderr.toString()).toBe(0);
    const values = r.stdout
      .toString()
      .split("\n")
      .map(recordOfLine)
      .flatMap((x) => (x?.kind === "heldSecret" ? [Buffer.from(x.value64, "base64").toString("utf8")] : []));
    expect(values).toEqual(["hf_tok1234", "it's-k3y"]);
  });

  it("masks each held secret, and SGLang's api_key='...' in its arguments, wherever they are in a line", () => {
    const line = "server_args=ServerArgs(host='0.0.0.0', api_key='sk-other', port=30000) token hf_tok1234 --hf-token x";
    expect(maskSecrets(line, { a: "hf_tok1234" })).toBe(
      "server_args=ServerArgs(host='0.0.0.0', api_key='****', port=30000) token **** --hf-token ****",
    );
    expect(maskSecrets('API_KEY="abc" Api_Key=def', {})).toBe('API_KEY="****" Api_Key=****');
  });
});
