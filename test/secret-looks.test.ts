/**
 * What looks secret (src/text/secrets): one rule for names and values, used by the plan-time
 * look's .env diff (drift in the plan and the state, the preflight's key diff in the output), the
 * plan's env lines, the state's bundle, and every backend URL sm121 prints or stores. A token
 * added by hand to a node's .env is said added or changed, never with a character of its value.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadRecipes } from "../src/engines/recipes";
import { readSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { deploymentPlan, holdsSecrets } from "../src/render/plan";
import type { DeploymentBundle, NodeBundle } from "../src/render/types";
import { backendIdentity, currentBackend, ownerOf } from "../src/serve/owner";
import { type NodeState } from "../src/serve/probe";
import { driftFindings, envKeyDiff } from "../src/serve/drift";
import { LOCALES, say, type Msg } from "../src/text/messages";
import { looksSecret, secretName, secretValue, withoutCredentials } from "../src/text/secrets";
import { testDir } from "./helpers/tmp";

const ROOT = join(__dirname, "..");
const site = readSite(join(__dirname, "fixtures", "sites", "examples.yaml"), "examples", "Pulumi.examples.yaml");
const bundles = renderSite(site, loadRecipes(join(ROOT, "recipes"), "recipes"), { root: ROOT });
const b = bundles.find((x) => x.deployment === "qwen3-32b-vllm-tp2") as DeploymentBundle;
const docker = b.nodes[0] as NodeBundle;
const FILE = "/srv/spark/recipes/qwen/.env";
const withEnv: NodeBundle = {
  ...docker,
  node: "spark2",
  files: [{ ...(docker.files[0] as NodeBundle["files"][number]), path: FILE, sha256: "a".repeat(64) }],
  envKeys: { MAX_NUM_SEQS: "8", NOTE: "plain" },
};
const state = (envText: string): NodeState => ({
  failed: [],
  running: true,
  startedAt: "2026-12-01T10:00:00Z",
  others: [],
  holders: [],
  recorded: { identity: withEnv.identity, files: { [FILE]: "a".repeat(64) } },
  files: { [FILE]: { sha256: "b".repeat(64), ctime: 0 } },
  envText,
});

const WANDB = "wandb_v1_7f3c9a0b1d2e4f5a6b7c8d9e0f1a2b3c4d5e6f7a";
const HF = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";

/** Each locale's words of a message: none holds any 6 characters of a secret. */
function expectNoneOf(m: Msg, secrets: string[]): void {
  for (const l of LOCALES) {
    const text = say(m, l);
    for (const s of secrets) for (let i = 0; i + 6 <= s.length; i++) expect(text, l).not.toContain(s.slice(i, i + 6));
  }
}

describe("what looks secret", () => {
  it("is a name with a credential's word in it, not a name that merely contains its letters", () => {
    for (const n of ["WANDB_API_KEY", "HF_TOKEN", "hfToken", "DB_PASSWORD", "DB_PASS", "PGPASSWORD", "AUTHORIZATION"])
      expect(secretName(n), n).toBe(true);
    for (const n of ["AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "sslpassword", "apikey", "x-auth"])
      expect(secretName(n), n).toBe(true);
    for (const n of ["MAX_NUM_BATCHED_TOKENS", "KV_CACHE_DTYPE", "TOKENIZER", "BYPASS_CACHE", "MODEL", "HF_HOME"])
      expect(secretName(n), n).toBe(false);
  });

  it("is a value that looks like a token, not a model name, a path or a number", () => {
    for (const v of [HF, "sk-proj-abcdefghijklmnop1234", "ghp_0123456789abcdefABCDEF", "0123456789abcdef".repeat(2)])
      expect(secretValue(v), v).toBe(true);
    for (const v of ["eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", "aB3dE5fG7hJ9kL1mN3pQ5rS7tV9wX1yZ"])
      expect(secretValue(v), v).toBe(true);
    expect(secretValue("postgres://ops:hunter2@db:5432/state")).toBe(true);
    for (const v of ["Qwen/Qwen3-Coder-30B-A3B-Instruct-FP8", "/srv/models/glm-5.3-flash-nvfp4", "32768", "auto"])
      expect(secretValue(v), v).toBe(false);
    expect(looksSecret("NOTE", HF)).toBe(true);
    expect(looksSecret("NOTE", "plain")).toBe(false);
  });

  it("is said added or changed in the drift and the key diff, never with its value, in every language", () => {
    const env = `MAX_NUM_SEQS="8"\nNOTE="${HF}"\nWANDB_API_KEY="${WANDB}"\n`;
    const drift = driftFindings(withEnv, state(env)).filter((d) => d.kind === "edited");
    expect(drift.map((d) => say(d.said, "en"))).toEqual([
      "spark2: .env edited on the node: NOTE changed (a value that looks secret is not shown), " +
        "WANDB_API_KEY added (a value that looks secret is not shown)",
    ]);
    for (const d of drift) expectNoneOf(d.said, [WANDB, HF]);
    const keys = envKeyDiff(withEnv, state(env)) as Msg;
    expect(say(keys, "en")).toBe(
      ".env keys, node -> render: NOTE changed (a value that looks secret is not shown), WANDB_API_KEY removed",
    );
    expectNoneOf(keys, [HF]);
    // A value that looks like nothing secret is still shown.
    const plain = driftFindings(withEnv, state('MAX_NUM_SEQS="4"\nNOTE="plain"\n')).map((d) => say(d.said, "en"));
    expect(plain).toContain("spark2: .env edited on the node: MAX_NUM_SEQS 8 -> 4");
  });

  it("shows as (secret) in the plan, and makes the bundle a Pulumi secret in the state", () => {
    const node = { ...docker, env: { ...docker.env, WANDB_API_KEY: WANDB, NCCL_DEBUG: "INFO" } };
    const secretBundle = { ...b, nodes: [node, ...b.nodes.slice(1)] };
    const plan = deploymentPlan(secretBundle);
    expect(plan).toContain("env WANDB_API_KEY=(secret)");
    expect(plan).toContain("env NCCL_DEBUG=INFO");
    expect(plan).not.toContain(WANDB.slice(0, 12));
    expect(holdsSecrets(secretBundle)).toBe(true);
    expect(holdsSecrets(b)).toBe(false);
  });
});

describe("a backend URL sm121 prints or stores", () => {
  it("has no user, password or secret query", () => {
    expect(withoutCredentials("postgres://ops:hunter2@db:5432/state?sslmode=disable&password=x")).toBe(
      "postgres://db:5432/state?sslmode=disable",
    );
    expect(withoutCredentials("https://api.pulumi.com")).toBe("https://api.pulumi.com");
    expect(withoutCredentials("s3://bucket/state?region=eu&token=abc#frag")).toBe("s3://bucket/state?region=eu");
    expect(withoutCredentials("not a url")).toBe("not a url");
    expect(backendIdentity("postgres://db:5432/state?password=hunter2")).toBe("postgres://db:5432/state");
    expect(backendIdentity("postgres://ops:hunter2@db/state")).toBe("postgres://db/state");
    expect(backendIdentity("file:///srv/pulumi/")).toBe("file:///srv/pulumi");
  });

  it("is the backend of this run, and of a record an older sm121 wrote with the password in it", () => {
    const env = { PULUMI_BACKEND_URL: "postgres://ops:pw1@db/state?sslpassword=pw2" };
    expect(currentBackend(env, "/nonexistent")).toBe("postgres://db/state");
    const home = testDir("sm121-backend-");
    mkdirSync(join(home, ".pulumi"));
    writeFileSync(join(home, ".pulumi", "credentials.json"), JSON.stringify({ current: "postgres://db/s?password=x" }));
    expect(currentBackend({}, home)).toBe("postgres://db/s");
    const old = ownerOf({ project: "sm121", stack: "prod", backend: "postgres://db/state?password=hunter2" });
    expect(old).toEqual({ project: "sm121", stack: "prod", backend: "postgres://db/state" });
  });
});
