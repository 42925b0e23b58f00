/**
 * Nothing secret outlives its deployment, through the real Pulumi CLI: backups of the script
 * recipe's .env are kept to sm121:keepBackups at 0600 and a rotation rewrites them without the
 * old token; a deployment removed from the site, and every deployment at destroy, leaves no
 * secret file and no directory of its own on its nodes; after destroy every file under each
 * node's home is listed, and no secret used in the run is found anywhere on the site.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "../site/alloc";
import { e2eProject, type E2E } from "../helpers/project";
import { makeScriptRecipe } from "../site/recipe";
import type { SimNode } from "../site/site";

const AT = allocate(__filename);

const TOKENS = ["hf_cleanup_one_11aa", "hf_cleanup_two_22bb", "hf_cleanup_three_33cc", "hf_cleanup_four_44dd"].concat([
  "hf_cleanup_five_55ee",
]);
const KEY = "sk-cleanup-key-66ff";
const RECIPES = {
  "vl-docker.toml":
    'engine = "vllm"\ndeploy = "docker"\nmodel = "Qwen/Qwen3-8B"\n' +
    'image = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\n',
  "sg-tmux.toml": 'engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 30000\n',
};
const ALL = [
  "{ name: flash, recipe: qwen38-flash, profile: datagen, nodes: [c1] }",
  "{ recipe: vl-docker, nodes: [c2] }",
  "{ recipe: sg-tmux, nodes: [c3] }",
];
/** The node lines of the script recipe's node: its vars and where the recipe is. */
const FLASH_NODE = (home: string) =>
  `      vars: { tritonCache: ${home}/triton }\n      recipes:\n` +
  "        qwen38-flash: { dir: ~/flash, container: qwen38-flash }";

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    return d.isDirectory() ? filesUnder(p) : d.isFile() ? [p] : [];
  });
}

describe.sequential("secrets on the nodes end with their deployment", () => {
  let e: E2E;
  let c1: SimNode;
  const config = (deployments: string[], keep?: number) => {
    const keepLine = keep === undefined ? [] : [`  sm121:keepBackups: ${keep}`];
    return [...keepLine, "  sm121:deployments:", ...deployments.map((d) => `    - ${d}`)].join("\n");
  };
  const set = async (key: string, value: string) =>
    expect((await e.pulumi.run(["config", "set", "--secret", key], { input: value })).code).toBe(0);
  /** A rewritten stack file keeps only the ssh key of the secrets (helpers/project): the others are set again. */
  const reconfigure = async (deployments: string[], keep?: number) => {
    e.reconfigure(config(deployments, keep));
    await set("sm121:hfToken", TOKENS.at(-1) ?? "");
    await set("sm121:apiKey", KEY);
  };
  const backups = () =>
    readdirSync(join(c1.home, "flash"))
      .filter((f) => f.startsWith(".env.sm121-bak-"))
      .map((f) => join(c1.home, "flash", f));

  beforeAll(async () => {
    e = await e2eProject({
      name: "secret-cleanup",
      nodes: ["c1", "c2", "c3"],
      ...AT.site(),
      nodeEnv: (n): Record<string, string> => (n.name === "c1" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),
      nodeExtra: (n) => (n.name === "c1" ? FLASH_NODE(n.home) : ""),
      prepare: (site) => void makeScriptRecipe(site.nodes[0] as SimNode, "flash"),
      recipes: RECIPES,
      config: () => config(ALL),
    });
    c1 = e.site.nodes[0] as SimNode;
    await set("sm121:apiKey", KEY);
  });
  afterAll(async () => {
    await e?.stop();
  });

  it("keeps three backups of the .env by default, each 0600, none with a token since rotated out", async () => {
    for (const t of TOKENS) {
      await set("sm121:hfToken", t);
      const up = await e.up();
      expect(up.code, up.all).toBe(0);
    }
    const kept = backups();
    expect(kept).toHaveLength(3);
    const current = TOKENS.at(-1) ?? "";
    for (const b of kept) {
      expect(statSync(b).mode & 0o777, b).toBe(0o600);
      const text = readFileSync(b, "utf8");
      for (const old of TOKENS.slice(0, -1)) expect(text, b).not.toContain(old);
      expect(text).toContain(`HF_TOKEN="${current}"`);
    }
  }, 300_000); // five ups, one per token

  it("keeps sm121:keepBackups of them", async () => {
    await reconfigure(ALL, 1);
    const up = await e.up({ SM121_RESTART: "1" });
    expect(up.code, up.all).toBe(0);
    expect(backups()).toHaveLength(1);
  });

  it("removes a deployment's secret files and directory when it leaves the site", async () => {
    const c3 = e.site.nodes[2] as SimNode;
    const dir = join(c3.home, ".sm121", "deployments", "sg-tmux");
    expect(readdirSync(dir)).toEqual(expect.arrayContaining(["secrets.env", "api-key.yaml"]));
    await reconfigure(ALL.slice(0, 2), 1);
    const up = await e.up();
    expect(up.code, up.all).toBe(0);
    expect(readdirSync(join(c3.home, ".sm121", "deployments"))).toEqual([]);
  });

  it("leaves no secret on any node after destroy", async () => {
    const d = await e.destroy();
    expect(d.code, d.all).toBe(0);
    const listing = e.site.nodes.flatMap((n) => filesUnder(n.home).map((f) => `${n.name}: ${relative(n.home, f)}`));
    // What sm121 leaves under each home: nothing of a deployment's own; in the operator's recipe
    // directory, its .env and the one backup kept (sm121:keepBackups 1), their secret lines gone.
    expect(listing.filter((l) => /\.sm121\/deployments\/|secrets\.env|api-key\.yaml/.test(l))).toEqual([]);
    const envs = listing
      .filter((l) => /\/\.env($|\.sm121)/.test(l))
      .map((l) => l.replace(/bak-\d{8}T\d{6}Z$/, "bak-<UTC>"));
    expect(envs).toEqual(["c1: flash/.env", "c1: flash/.env.sm121-bak-<UTC>"]);
    const hits: string[] = [];
    // A container's environment is Docker's to keep: containerd records it in its metadata database
    // (root only), whose freed pages keep the bytes after `docker rm` until bolt reuses them, as on
    // any Docker host (docs/security.md). Everything else on the site is searched.
    const docker = /\/docker\/data\/containerd\/daemon\/io\.containerd\.metadata\.v1\.bolt\/meta\.db$/;
    for (const f of filesUnder(e.site.dir).filter((p) => !docker.test(p))) {
      let text: string;
      try {
        text = readFileSync(f, "latin1");
      } catch {
        continue;
      }
      for (const s of [...TOKENS, KEY]) {
        if (text.includes(s)) hits.push(`${relative(e.site.dir, f)}: ${s.slice(0, 12)}...`);
      }
    }
    expect(hits).toEqual([]);
  });
});
