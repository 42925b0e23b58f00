/**
 * The gateway files against each gateway's documented schema, transcribed here:
 * - LiteLLM 1.108.7, `litellm/proxy/_types.py`: `ConfigYAML.model_list: list[ModelParams]`,
 *   `ModelParams {model_name: str, litellm_params: dict, model_info: ModelInfo}`; the openai
 *   provider needs `model`, `api_base` and a key (docs/my-website/docs/proxy/configs.md:
 *   `api_key: os.environ/NAME` reads the proxy's environment).
 * - llama-swap, `config-schema.json` (mostlygeek/llama-swap at 0bdb3720): `models` is required;
 *   `peers.<id>` needs `proxy` (a URI) and `models` (non-empty strings), `apiKey` is a string
 *   (a `${env.NAME}` macro is filled from llama-swap's environment at load).
 * - sm121 (seed 001's gateway-backends.json): an endpoint is enabled or carries why it is not.
 */
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { z } from "zod";
import { disableEndpoints, gatewayFile, type GatewayModel } from "../src/gateway/file.render";

const litellmSchema = z.object({
  model_list: z.array(
    z.object({
      model_name: z.string().min(1),
      litellm_params: z.object({
        model: z.string().regex(/^openai\/.+/),
        api_base: z.url().regex(/\/v1$/),
        api_key: z.string().min(1),
      }),
      model_info: z.object({ id: z.string().min(1) }),
    }),
  ),
});

const llamaSwapSchema = z.object({
  models: z.record(z.string(), z.object({ cmd: z.string().min(1) })),
  peers: z.record(
    z.string().min(1),
    z.object({
      proxy: z.url(),
      apiKey: z.string().optional(),
      // config-schema.json has no minItems, but the loader refuses "peer models can not be empty".
      models: z.array(z.string().min(1)).min(1),
    }),
  ),
});

const sm121Schema = z.strictObject({
  models: z.array(
    z.strictObject({
      name: z.string().min(1),
      deployment: z.string().min(1),
      status: z.string(),
      endpoints: z
        .array(
          z.union([
            z.strictObject({ node: z.string(), url: z.url(), enabled: z.literal(true) }),
            z.strictObject({ node: z.string(), url: z.url(), enabled: z.literal(false), disabled: z.string().min(1) }),
          ]),
        )
        .min(1),
    }),
  ),
});

const models: GatewayModel[] = [
  {
    deployment: "flash",
    model: "qwen38",
    status: "failed",
    endpoints: [
      { node: "spark1", url: "http://203.0.113.1:8000", reachable: true },
      { node: "spark2", url: "http://127.0.0.1:8000", reachable: false },
    ],
  },
  {
    deployment: "big",
    model: "qwen3-32b",
    status: "serving",
    endpoints: [{ node: "spark3", url: "http://203.0.113.3:8000", reachable: true }],
  },
  {
    deployment: "big-b",
    model: "qwen3-32b",
    status: "serving",
    endpoints: [{ node: "spark4", url: "http://203.0.113.4:8000", reachable: true }],
  },
];

/** The endpoint of deployment big, disabled after a failed serve. */
const BIG = [{ deployment: "big", node: "spark3" }];

describe("gateway files against each gateway's documented schema", () => {
  for (const apiKey of [false, true]) {
    it(`LiteLLM model_list (sm121:apiKey ${apiKey ? "set" : "not set"})`, () => {
      const f = gatewayFile("litellm", models, { apiKey });
      const doc = litellmSchema.parse(parse(f.text));
      expect(
        doc.model_list.every(
          (m) => m.litellm_params.api_key === (apiKey ? "os.environ/SM121_API_KEY" : "sm121-no-key"),
        ),
      ).toBe(true);
      litellmSchema.parse(parse(disableEndpoints("litellm", f.text, BIG, "failed").text));
    });

    it(`llama-swap peers (sm121:apiKey ${apiKey ? "set" : "not set"})`, () => {
      const f = gatewayFile("llama-swap", models, { apiKey });
      const doc = llamaSwapSchema.parse(parse(f.text));
      expect(Object.values(doc.peers).map((p) => p.apiKey)).toEqual(
        Object.values(doc.peers).map(() => (apiKey ? "${env.SM121_API_KEY}" : undefined)),
      );
      llamaSwapSchema.parse(parse(disableEndpoints("llama-swap", f.text, BIG, "failed").text));
    });
  }

  it("sm121 backends: no endpoint is enabled and disabled at once, also after a failure", () => {
    const f = gatewayFile("sm121", models, { apiKey: false });
    sm121Schema.parse(JSON.parse(f.text));
    sm121Schema.parse(JSON.parse(disableEndpoints("sm121", f.text, BIG, "failed").text));
  });
});
