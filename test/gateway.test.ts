/** The gateway backend file in its three formats: enabling rules, the first-endpoint rule, failures. */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { disableEndpoints, gatewayFile as render, LITELLM_PLACEHOLDER_KEY } from "../src/gateway/file.render";
import type { GatewayModel, GatewayOptions } from "../src/gateway/file.render";
import { say } from "../src/text/messages";

const NO_KEY: GatewayOptions = { apiKey: false };
const gatewayFile = (format: Parameters<typeof render>[0], models: GatewayModel[], opts: GatewayOptions = NO_KEY) =>
  render(format, models, opts);

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
    const doc = JSON.parse(f.text) as {
      models: Array<{ name: string; endpoints: Array<{ node: string; enabled: boolean; disabled?: string }> }>;
    };
    expect(doc.models[0]?.name).toBe("qwen38");
    expect(doc.models[0]?.endpoints).toEqual([
      { node: "spark1", url: "http://203.0.113.1:8000", enabled: true },
      {
        node: "spark2",
        url: "http://127.0.0.1:8000",
        enabled: false,
        disabled: "the gateway cannot reach its bind address",
      },
    ]);
    expect(f.warnings).toEqual([]);
    expect(say(f.restartNote, "en")).toContain("PULSE_QWEN_BACKENDS");
  });

  it(
    "keeps the first endpoint of a model with none usable enabled (never enabled and disabled at once), " +
      "with a warning",
    () => {
      const f = gatewayFile("sm121", [qwen("failed")]);
      const eps = (
        JSON.parse(f.text) as { models: Array<{ endpoints: Array<{ enabled: boolean; disabled?: string }> }> }
      ).models[0]?.endpoints;
      expect(eps).toEqual([
        { node: "spark1", url: "http://203.0.113.1:8000", enabled: true },
        { node: "spark2", url: "http://127.0.0.1:8000", enabled: false, disabled: "the deployment is failed" },
      ]);
      expect(f.warnings).toEqual([
        "model qwen38: no endpoint is usable (the deployment is failed); " +
          "spark1 stays enabled so that the gateway accepts the config",
      ]);
    },
  );

  it(
    "writes LiteLLM's model_list with one entry per enabled endpoint " +
      "and a placeholder key when the engines have none",
    () => {
      const f = gatewayFile("litellm", [qwen("serving", false)]);
      const doc = parse(f.text) as {
        model_list: Array<{ model_name: string; litellm_params: { api_base: string; model: string; api_key: string } }>;
      };
      expect(doc.model_list).toHaveLength(1);
      expect(doc.model_list[0]).toMatchObject({
        model_name: "qwen38",
        litellm_params: {
          model: "openai/qwen38",
          api_base: "http://203.0.113.1:8000/v1",
          api_key: LITELLM_PLACEHOLDER_KEY,
        },
      });
      expect(f.text).toContain(
        "# disabled: qwen38 on spark2 (http://127.0.0.1:8000): the gateway cannot reach its bind address",
      );
      expect(say(f.restartNote, "en")).not.toContain("SM121_API_KEY");
    },
  );

  it("reads the engines' key from $SM121_API_KEY in LiteLLM when sm121:apiKey is set, and says so", () => {
    const f = gatewayFile("litellm", [qwen("serving")], { apiKey: true });
    const doc = parse(f.text) as { model_list: Array<{ litellm_params: { api_key: string } }> };
    expect(doc.model_list.map((m) => m.litellm_params.api_key)).toEqual([
      "os.environ/SM121_API_KEY",
      "os.environ/SM121_API_KEY",
    ]);
    expect(say(f.restartNote, "en")).toBe(
      "LiteLLM reads its config at start: set SM121_API_KEY in the proxy's environment to the engines' key " +
        "(pulumi config get sm121:apiKey) and restart it: litellm --config <file> (or include: " +
        "[<file>] in your proxy config)",
    );
  });

  it("writes llama-swap peers for the enabled endpoints, with the key macro only when sm121:apiKey is set", () => {
    const big: GatewayModel = {
      deployment: "big",
      model: "qwen3-32b",
      status: "serving",
      endpoints: [{ node: "spark3", url: "http://203.0.113.3:8000", reachable: true }],
    };
    const plain = gatewayFile("llama-swap", [big]);
    expect(parse(plain.text)).toEqual({
      models: {},
      peers: { "big-spark3": { proxy: "http://203.0.113.3:8000", models: ["qwen3-32b"] } },
    });
    expect(plain.text).not.toContain("SM121_API_KEY");
    expect(plain.warnings).toEqual([]);
    const keyed = gatewayFile("llama-swap", [big], { apiKey: true });
    expect(parse(keyed.text)).toEqual({
      models: {},
      peers: {
        "big-spark3": { proxy: "http://203.0.113.3:8000", apiKey: "${env.SM121_API_KEY}", models: ["qwen3-32b"] },
      },
    });
    expect(say(keyed.restartNote, "en")).toContain("SM121_API_KEY=");
    expect(say(keyed.restartNote, "en")).toContain("llama-swap -config <file> -watch-config");
  });

  it("warns when several llama-swap peers serve one model name, naming the <peer>/<model> names that route", () => {
    const other: GatewayModel = {
      deployment: "flash-b",
      model: "qwen38",
      status: "serving",
      endpoints: [{ node: "spark3", url: "http://203.0.113.3:8000", reachable: true }],
    };
    const f = gatewayFile("llama-swap", [qwen("serving", false), other]);
    expect(Object.keys((parse(f.text) as { peers: Record<string, unknown> }).peers)).toEqual([
      "flash-spark1",
      "flash-b-spark3",
    ]);
    expect(f.warnings).toEqual([
      "model qwen38 is served by 2 llama-swap peers (flash-spark1, flash-b-spark3): " +
        'llama-swap does not route the plain name "qwen38" then; ' +
        "clients ask for flash-spark1/qwen38 or flash-b-spark3/qwen38, " +
        "or give the deployments distinct served model names",
    ]);
  });

  it("disables a failed deployment in a file it wrote, in each format, and keeps its entries", () => {
    const other: GatewayModel = {
      deployment: "big",
      model: "qwen3-32b",
      status: "serving",
      endpoints: [{ node: "spark3", url: "http://203.0.113.3:8000", reachable: true }],
    };
    const flash = [
      { deployment: "flash", node: "spark1" },
      { deployment: "flash", node: "spark2" },
    ];
    const disabled = disableEndpoints("sm121", gatewayFile("sm121", [qwen("serving"), other]).text, flash, "failed");
    const json = JSON.parse(disabled.text) as {
      models: Array<{ status: string; endpoints: Array<{ enabled: boolean; disabled?: string }> }>;
    };
    expect(json.models[0]?.status).toBe("failed");
    expect(json.models[0]?.endpoints.map((e) => [e.enabled, e.disabled])).toEqual([
      [true, undefined],
      [false, "the deployment is failed"],
    ]);
    expect(json.models[1]?.endpoints.map((e) => e.enabled)).toEqual([true]);
    expect(disabled.warnings).toEqual([
      "model qwen38: no endpoint is usable (the deployment is failed); " +
        "spark1 stays enabled so that the gateway accepts the config",
    ]);
    const both = (format: "litellm" | "llama-swap") => gatewayFile(format, [qwen("serving"), other]).text;
    const failedFlash = "# disabled: qwen38 on spark1 (http://203.0.113.1:8000): the deployment is failed";
    const liteText = disableEndpoints("litellm", both("litellm"), flash, "failed").text;
    const lite = parse(liteText) as { model_list: Array<{ model_name: string }> };
    expect(lite.model_list.map((m) => m.model_name)).toEqual(["qwen3-32b"]);
    // LiteLLM has no switch for an entry: the entry stays in the file, commented out, with why.
    expect(liteText).toContain(`${failedFlash}\n#   - model_name: qwen38\n`);
    expect(liteText).toContain("#       id: flash-spark2");
    const swapText = disableEndpoints("llama-swap", both("llama-swap"), flash, "failed").text;
    const swap = parse(swapText) as { peers: Record<string, { models: string[] }> };
    expect(Object.keys(swap.peers)).toEqual(["big-spark3"]);
    expect(swapText).toContain(`${failedFlash}\n#   flash-spark1:\n#     proxy: http://203.0.113.1:8000\n`);
  });

  it("writes a downed or removed deployment's endpoints disabled, each format its own way", () => {
    const endpoint = { node: "spark4", url: "http://203.0.113.4:8000" };
    const removed: GatewayModel = {
      deployment: "old",
      model: "qwen3-8b",
      status: "removed",
      endpoints: [{ ...endpoint, reachable: true }],
    };
    const sm = JSON.parse(gatewayFile("sm121", [qwen("serving"), removed]).text) as { models: unknown[] };
    // Seed 001's gateway rejects a model with no enabled endpoint: the first stays enabled, with a warning.
    const kept = [{ ...endpoint, enabled: true }];
    expect(sm.models[1]).toEqual({ name: "qwen3-8b", deployment: "old", status: "removed", endpoints: kept });
    const lite = gatewayFile("litellm", [qwen("serving"), removed]);
    expect((parse(lite.text) as { model_list: unknown[] }).model_list).toHaveLength(2);
    const gone =
      "# disabled: qwen3-8b on spark4 (http://203.0.113.4:8000): " +
      "the deployment was removed from the site; sm121 stops it";
    expect(lite.text).toContain(gone);
    const swap = gatewayFile("llama-swap", [qwen("failed"), removed]);
    expect((parse(swap.text) as { peers: Record<string, unknown> }).peers).toEqual({});
    expect(swap.text).toContain(`${gone}\n#   old-spark4:\n`);
    expect(swap.warnings).toEqual([]);
  });

  it("disables every endpoint of a file on destroy, and keeps the file", () => {
    const text = gatewayFile("llama-swap", [qwen("serving")]).text;
    const all = disableEndpoints("llama-swap", text, "all", "destroyed").text;
    expect((parse(all) as { peers: Record<string, unknown> }).peers).toEqual({});
    expect(all).toContain("# disabled: qwen38 on flash-spark1 (http://203.0.113.1:8000): the stack was destroyed");
  });
});
