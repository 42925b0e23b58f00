/**
 * The engines' key in the gateway file: sm121 writes only a reference, which the gateway fills from
 * its own environment ($SM121_API_KEY). Every API key the plan accepts must come out of that
 * reference byte for byte:
 * - LiteLLM 1.108.7 (the real package, in the virtualenv scripts/venvs.sh builds): each entry's
 *   `api_key: os.environ/SM121_API_KEY`, read from sm121's file by YAML's safe loader, resolved by
 *   LiteLLM's own get_secret, as its proxy resolves `os.environ/` values;
 * - llama-swap: its config loader pastes the variable's value over `${env.SM121_API_KEY}` in the
 *   file's text before it parses the YAML, escaping `\` and `"` (proxy/config/config.go
 *   substituteEnvMacros, mostlygeek/llama-swap at b5fde8eb); done here the same way on sm121's file,
 *   then parsed as YAML 1.2 (as its yaml.v3 does).
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { gatewayFile, type GatewayModel } from "../src/gateway/file.render";
import { secretRefusals } from "../src/render/secrets";

const KEYS = [
  "sk-plain-key-0001",
  "$(touch /tmp/sm121-gateway-ran)",
  "`touch /tmp/sm121-gateway-ran`",
  `it's "double" and 'single'`,
  'back\\slash \\" \\n \\\\ end\\',
  "a key: with # a hash and  spaces",
  "-leading --dash",
  "{braces} [list] &anchor *alias !tag %percent @at |pipe >gt ?q",
  "${env.SM121_API_KEY} ${PORT} ${MODEL_ID}",
  "'",
  `4k-${"x'\"$`\\ :#".repeat(600)}`.slice(0, 4095) + "!",
];

const MODELS: GatewayModel[] = [
  {
    deployment: "a",
    model: "m-a",
    status: "serving",
    endpoints: [{ node: "n1", url: "http://10.0.0.1:8000", reachable: true }],
  },
  {
    deployment: "b",
    model: "m-b",
    status: "serving",
    endpoints: [{ node: "n2", url: "http://10.0.0.2:8000", reachable: true }],
  },
];

const sha = (v: string) => createHash("sha256").update(Buffer.from(v, "utf8")).digest("hex");
const dir = mkdtempSync(join(tmpdir(), "sm121-gateway-keys-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("the API key through the gateway file's reference", () => {
  it("every key here is one the plan accepts (no engine is SGLang)", () => {
    for (const k of KEYS) expect(secretRefusals({ API_KEY: k }, [{ deployment: "a", engine: "vllm" }])).toEqual([]);
  });

  it("llama-swap: the loader's text substitution of the double-quoted macro reads back every key", () => {
    const text = gatewayFile("llama-swap", MODELS, { apiKey: true }).text;
    expect(text).toContain('apiKey: "${env.SM121_API_KEY}"');
    for (const key of KEYS) {
      const pasted = text.split("${env.SM121_API_KEY}").join(key.replace(/\\/g, "\\\\").replace(/"/g, '\\"'));
      const doc = parse(pasted) as { peers: Record<string, { apiKey: string }> };
      expect(Object.values(doc.peers).map((p) => p.apiKey)).toEqual([key, key]);
    }
  });

  const python = join(homedir(), ".cache", "sm121", "litellm", "bin", "python");
  it.skipIf(!existsSync(python))("LiteLLM: its own os.environ/ resolution gives every key back, byte for byte", () => {
    const file = join(dir, "litellm.yaml");
    writeFileSync(file, gatewayFile("litellm", MODELS, { apiKey: true }).text);
    const script = [
      "import base64, hashlib, json, os, sys, yaml",
      "from litellm.secret_managers.main import get_secret",
      "doc = yaml.safe_load(open(sys.argv[1]))",
      "out = []",
      "for k in json.load(sys.stdin):",
      "    os.environ['SM121_API_KEY'] = base64.b64decode(k).decode('utf-8')",
      "    got = [get_secret(e['litellm_params']['api_key']) for e in doc['model_list']]",
      "    out.append([hashlib.sha256(g.encode('utf-8')).hexdigest() for g in got])",
      "print(json.dumps(out))",
    ].join("\n");
    const input = JSON.stringify(KEYS.map((k) => Buffer.from(k, "utf8").toString("base64")));
    const env = { PATH: process.env["PATH"] ?? "", HOME: dir, LITELLM_LOCAL_MODEL_COST_MAP: "True" };
    const r = spawnSync(python, ["-c", script, file], { input, env, encoding: "utf8", timeout: 120_000 });
    expect(r.status, r.stderr).toBe(0);
    const got = JSON.parse(r.stdout.trim().split("\n").at(-1) ?? "[]") as string[][];
    expect(got).toEqual(KEYS.map((k) => [sha(k), sha(k)]));
    expect(existsSync("/tmp/sm121-gateway-ran")).toBe(false);
  });
});
