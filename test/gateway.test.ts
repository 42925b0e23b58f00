/** The gateway backend file in its three formats: enabling rules, the first-endpoint rule, failures. */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { disableDeployment, gatewayFile, type GatewayModel } from "../src/render/gateway";

const qwen = (status: string, reachable2 = true): GatewayModel => ({
  deployment: "flash",
  model: "qwen38",
  status,
  endpoints: [
    { node: "spark1", url: "http://203.0.113.1:8000", reachable: true },
    { node: "spark2", url: "http://127.0.0.1:8000", reachable: reachable2 },
  ],
});

describe("the gateway backend file", () => {
  it("enables reachable endpoints of a serving deployment and says why others are not", () => {
    const f = gatewayFile("sm121", [qwen("serving", false)]);
    const doc = JSON.parse(f.text) as { models: Array<{ name: string; endpoints: Array<{ node: string; enabled: boolean; disabled?: string }> }> };
    expect(doc.models[0]?.name).toBe("qwen38");
    expect(doc.models[0]?.endpoints).toEqual([
      { node: "spark1", url: "http://203.0.113.1:8000", enabled: true },
      { node: "spark2", url: "http://127.0.0.1:8000", enabled: false, disabled: "the gateway cannot reach its bind address" },
    ]);
    expect(f.warnings).toEqual([]);
    expect(f.restartNote).toContain("PULSE_QWEN_BACKENDS");
  });

  it("keeps the first endpoint of a model with none usable enabled, with a warning", () => {
    const f = gatewayFile("sm121", [qwen("failed")]);
    const eps = (JSON.parse(f.text) as { models: Array<{ endpoints: Array<{ enabled: boolean }> }> }).models[0]?.endpoints;
    expect(eps?.map((e) => e.enabled)).toEqual([true, false]);
    expect(f.warnings).toEqual(["model qwen38: no endpoint is usable (the deployment is failed); spark1 stays enabled so that the gateway accepts the config"]);
  });

  it("writes LiteLLM's model_list with one entry per enabled endpoint", () => {
    const f = gatewayFile("litellm", [qwen("serving", false)]);
    const doc = parse(f.text) as { model_list: Array<{ model_name: string; litellm_params: { api_base: string; model: string } }> };
    expect(doc.model_list).toHaveLength(1);
    expect(doc.model_list[0]).toMatchObject({ model_name: "qwen38", litellm_params: { model: "openai/qwen38", api_base: "http://203.0.113.1:8000/v1" } });
    expect(f.text).toContain("# disabled: qwen38 on spark2 (http://127.0.0.1:8000): the gateway cannot reach its bind address");
  });

  it("writes llama-swap peers for the enabled endpoints", () => {
    const f = gatewayFile("llama-swap", [qwen("serving")]);
    expect(parse(f.text)).toEqual({ peers: { "flash-spark1": { proxy: "http://203.0.113.1:8000", models: ["qwen38"] }, "flash-spark2": { proxy: "http://127.0.0.1:8000", models: ["qwen38"] } } });
  });

  it("disables a failed deployment in a file it wrote, in each format", () => {
    const other: GatewayModel = { deployment: "big", model: "qwen3-32b", status: "serving", endpoints: [{ node: "spark3", url: "http://203.0.113.3:8000", reachable: true }] };
    const json = JSON.parse(disableDeployment("sm121", gatewayFile("sm121", [qwen("serving"), other]).text, "flash")) as { models: Array<{ status: string; endpoints: Array<{ enabled: boolean }> }> };
    expect(json.models[0]?.status).toBe("failed");
    expect(json.models[0]?.endpoints.map((e) => e.enabled)).toEqual([true, false]);
    expect(json.models[1]?.endpoints.map((e) => e.enabled)).toEqual([true]);
    const lite = parse(disableDeployment("litellm", gatewayFile("litellm", [qwen("serving"), other]).text, "flash")) as { model_list: Array<{ model_name: string }> };
    expect(lite.model_list.map((m) => m.model_name)).toEqual(["qwen3-32b"]);
    const swap = parse(disableDeployment("llama-swap", gatewayFile("llama-swap", [qwen("serving"), other]).text, "flash")) as { peers: Record<string, unknown> };
    expect(Object.keys(swap.peers)).toEqual(["big-spark3"]);
  });
});
