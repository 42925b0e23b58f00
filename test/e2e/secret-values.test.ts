/**
 * A secret is data wherever a shell reads it: hostile values of sm121:hfToken and sm121:apiKey go
 * through the real Pulumi CLI to every path that carries a secret (a script recipe's .env, which
 * its start.sh sources; secrets.env, read into docker, tmux and native engines; SGLang's key file)
 * and every target. Each engine reports the sha256 of what it got (the fake engine's
 * /test-site/received), which must be the value's own, byte for byte; marker files prove that no
 * value ran as a command, at the up or at the stop.sh of the next one. A value a path cannot carry
 * is refused by the plan, naming the config key and the reason, before any node is touched.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { sshScript } from "../site/exec";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const sha = (v: string) => createHash("sha256").update(Buffer.from(v, "utf8")).digest("hex");
const MARK = "sm121-ran";

/** Each value tries to run `touch <home>/sm121-ran-<n>` in its own way. */
const HOSTILE: Array<{ name: string; value: (home: string) => string; api: boolean }> = [
  { name: "command substitution", value: (h) => `$(touch ${h}/${MARK}-1)`, api: true },
  { name: "backticks", value: (h) => `\`touch ${h}/${MARK}-2\``, api: true },
  {
    name: "both quotes breaking out",
    value: (h) => `x'"$(touch ${h}/${MARK}-3)"'\`touch ${h}/${MARK}-4\`'`,
    api: true,
  },
  { name: "backslashes", value: () => "back\\slash \\$HOME \\n \\\\ end\\", api: true },
  { name: "spaces", value: () => "with  several spaces\tand a tab inside", api: false },
  { name: "interior spaces", value: () => "an api key with spaces", api: true },
  { name: "a leading dash", value: () => "-leading-dash --api-key", api: false },
  { name: "non-ASCII", value: () => "ключ-ü-€-🔑", api: false },
  { name: "4 KiB", value: () => `4k-${"x'\"$`\\ ".repeat(680)}`.slice(0, 4096), api: true },
];
const PLAIN_KEY = "sk-plain-api-key-0001";
/** The node lines of the script recipe's node: its vars and where the recipe is. */
const FLASH_NODE = (home: string) =>
  `      vars: { tritonCache: ${home}/triton }\n      recipes:\n` +
  "        qwen38-flash: { dir: ~/flash, container: qwen38-flash }";

const RECIPES = {
  "vl-docker.toml":
    'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\n' +
    'image = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\n',
  "vl-tmux.toml": 'engine = "vllm"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n',
  "vl-native.toml": 'engine = "vllm"\ndeploy = "native"\nmodel = "Qwen/Qwen3-8B"\nport = 8000\n',
  "sg-docker.toml":
    'engine = "sglang"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\n' +
    'image = "lmsysorg/sglang:spark"\nport = 30000\n',
  "sg-tmux.toml": 'engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 30000\n',
};
const DEPLOYMENTS = [
  "  sm121:deployments:",
  "    - { name: flash, recipe: qwen38-flash, profile: datagen, nodes: [h1] }",
  "    - { recipe: vl-docker, nodes: [h2] }",
  "    - { recipe: vl-tmux, nodes: [h3] }",
  "    - { recipe: vl-native, nodes: [h4] }",
  "    - { recipe: sg-docker, nodes: [h5] }",
  "    - { recipe: sg-tmux, nodes: [h6] }",
].join("\n");

describe.sequential("hostile secret values through every path and target", () => {
  let e: E2E;
  let nodes: SimNode[];
  const setSecret = async (key: string, value: string) => {
    const r = await e.pulumi.run(["config", "set", "--secret", key], { input: value });
    expect(r.code, r.all).toBe(0);
  };
  const received = async (n: SimNode, port: number, host = n.ip) => {
    const r = await sshScript(e.site, n, `curl -s http://${host}:${port}/test-site/received`);
    return JSON.parse(r.stdout) as { apiKeySha256: string[]; hfTokenSha256: string | null };
  };
  const marks = () =>
    nodes.flatMap((n) =>
      readdirSync(n.home)
        .filter((f) => f.startsWith(MARK))
        .map((f) => `${n.name}: ${f}`),
    );

  beforeAll(async () => {
    e = await e2eProject({
      name: "secret-values",
      nodes: ["h1", "h2", "h3", "h4", "h5", "h6"],
      ...AT.site(),
      nodeEnv: (n): Record<string, string> => (n.name === "h1" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      nodeExtra: (n) => (n.name === "h1" ? FLASH_NODE(n.home) : ""),
      prepare: (site) => void makeScriptRecipe(site.nodes[0] as SimNode, "flash"),
      recipes: RECIPES,
      config: () => DEPLOYMENTS,
    });
    nodes = e.site.nodes;
  });
  afterAll(async () => {
    await e?.stop();
  });

  for (const h of HOSTILE) {
    it(`carries ${h.name} byte for byte to every engine, and runs nothing`, async () => {
      const [h1, h2, h3, h4, h5, h6] = nodes as [SimNode, SimNode, SimNode, SimNode, SimNode, SimNode];
      const hf = h.value(h1.home);
      const key = h.api ? hf : PLAIN_KEY;
      await setSecret("sm121:hfToken", hf);
      await setSecret("sm121:apiKey", key);
      const up = await e.up();
      expect(marks()).toEqual([]);
      expect(up.code, up.all).toBe(0);
      for (const s of [hf, key]) expect(up.all).not.toContain(s);
      // The script recipe: start.sh sourced the .env and passed HF_TOKEN into its container.
      expect(await received(h1, AT.port(0), "127.0.0.1")).toEqual({ apiKeySha256: [], hfTokenSha256: sha(hf) });
      for (const [n, port] of [
        [h2, 8000],
        [h3, 8000],
        [h4, 8000],
        [h5, 30000],
        [h6, 30000],
      ] as const) {
        expect(await received(n, port), n.name).toEqual({ apiKeySha256: [sha(key)], hfTokenSha256: sha(hf) });
      }
      // The stop.sh of the next up reads the same .env: still nothing runs.
      expect(marks()).toEqual([]);
    });
  }

  it("refuses at plan time what a path cannot carry, naming the config key and the reason", async () => {
    const h1 = nodes[0] as SimNode;
    const cases: Array<{ key: string; value: string; says: RegExp }> = [
      { key: "sm121:hfToken", value: "line\nbreak", says: /sm121:hfToken holds a line break/ },
      { key: "sm121:apiKey", value: "line\nbreak", says: /sm121:apiKey holds a line break/ },
      { key: "sm121:apiKey", value: "ключ-🔑", says: /sm121:apiKey holds a character outside ASCII/ },
      { key: "sm121:apiKey", value: " padded ", says: /sm121:apiKey begins or ends with white space/ },
      {
        key: "sm121:apiKey",
        value: "-leading-dash",
        says: /sm121:apiKey begins with "-", and SGLang \(deployments sg-docker, sg-tmux\)/,
      },
    ];
    await setSecret("sm121:hfToken", "hf_plain");
    await setSecret("sm121:apiKey", PLAIN_KEY);
    const before = readdirSync(join(h1.home, "flash")).sort();
    for (const c of cases) {
      await setSecret(c.key, c.value);
      const preview = await e.preview();
      expect(preview.code, preview.all).not.toBe(0);
      expect(preview.all).toMatch(c.says);
      expect(preview.all).not.toContain(c.value.trim());
      const up = await e.up();
      expect(up.code).not.toBe(0);
      expect(up.all).toMatch(c.says);
      await setSecret(c.key, c.key === "sm121:apiKey" ? PLAIN_KEY : "hf_plain");
    }
    // Nothing was written: the refused ups never reached a node.
    expect(readdirSync(join(h1.home, "flash")).sort()).toEqual(before);
    expect(existsSync(join(h1.home, MARK))).toBe(false);
  }, 300_000); // five cases, each a preview and an up
});
