/**
 * The first-token part of readiness, run by bash against a local OpenAI-shaped server: the chat
 * goes with the bearer token read from the node's file (never in argv), a base model's 400 falls
 * back to a completion, and a chat that never answers fails with exit code 8 and its own message.
 */
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseRecipe } from "../src/engines/recipes";
import { parseSite } from "../src/recipe/site";
import { renderSite } from "../src/render/deployment";
import { readinessScript } from "../src/serve/readiness";

type Chat = "ok" | "bad-request" | "never";
let chat: Chat = "ok";
const seen: Array<{ url: string; auth: string | undefined }> = [];
let server: Server;
let port = 0;
const home = mkdtempSync(join(tmpdir(), "sm121-first-token-"));

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ url: req.url ?? "", auth: req.headers.authorization });
    req.resume();
    req.on("end", () => {
      if (req.headers.authorization !== "Bearer s3cret-key") return res.writeHead(401).end();
      if (req.url === "/v1/models")
        return res.writeHead(200).end(JSON.stringify({ object: "list", data: [{ id: "tiny", max_model_len: 128 }] }));
      if (req.url === "/v1/chat/completions" && chat === "never") return undefined;
      if (req.url === "/v1/chat/completions" && chat === "bad-request")
        return res.writeHead(400).end('{"message":"no chat template"}');
      return res.writeHead(200).end(JSON.stringify({ choices: [{ text: "OK" }] }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => {
  server.closeAllConnections();
  server.close();
  rmSync(home, { recursive: true, force: true });
});

/** The script under bash, asynchronously: the server answers from this process's event loop. */
async function run(): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const recipe = parseRecipe(
    "recipes/t.toml",
    `engine = "vllm"\ndeploy = "tmux"\nmodel = "org/tiny"\nport = ${port}\n[readiness]\ntimeout_s = 1\n`,
  );
  const site = parseSite(
    "Pulumi.s.yaml",
    "s",
    "config:\n  sm121:readyGraceS: 0\n  sm121:nodes:\n    n1: { host: local, ip: 127.0.0.1 }\n" +
      "  sm121:deployments:\n    - { recipe: t, nodes: [n1] }\n",
  );
  const [b] = renderSite(site, new Map([["t", recipe]]), { root: __dirname });
  const nb = b?.nodes[0];
  if (b === undefined || nb === undefined) throw new Error("no bundle");
  mkdirSync(join(home, ".sm121", "deployments", "t"), { recursive: true });
  writeFileSync(join(home, ".sm121", "deployments", "t", "secrets.env"), "API_KEY=s3cret-key\n");
  const script = readinessScript(nb, b.readiness);
  expect(script).not.toContain("s3cret-key");
  const child = spawn("bash", ["-s"], { env: { PATH: process.env["PATH"] ?? "", HOME: home } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
  child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
  child.stdin.end(script);
  const code = await new Promise<number | null>((resolve) => child.on("close", resolve));
  return { code, stdout, stderr };
}

describe("readiness by first token", () => {
  it("sends one chat of max_tokens 1 with the bearer token and records the times", async () => {
    chat = "ok";
    seen.length = 0;
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^@sm121 \{"kind":"firstToken","readyMs":\d+,"ttftMs":\d+\}$/m);
    expect(seen.map((s) => s.url)).toEqual(["/v1/models", "/v1/chat/completions"]);
    expect(seen.every((s) => s.auth === "Bearer s3cret-key")).toBe(true);
  });

  it("takes a completion's first token from a model that has no chat template (400)", async () => {
    chat = "bad-request";
    seen.length = 0;
    const r = await run();
    expect(r.code, r.stderr).toBe(0);
    expect(seen.map((s) => s.url)).toEqual(["/v1/models", "/v1/chat/completions", "/v1/completions"]);
    expect(r.stdout).toMatch(/"firstToken"/);
  });

  it("fails with exit code 8 and its own message when the chat never answers", async () => {
    chat = "never";
    const r = await run();
    expect(r.code).toBe(8);
    expect(r.stderr).toContain(
      `sm121: the engine lists its model but http://127.0.0.1:${port}/v1/chat/completions gave no first token ` +
        "within 5 s (a chat completion of max_tokens 1; readiness.timeout_s is 1)",
    );
    expect(r.stdout).not.toMatch(/firstToken/);
  });
});
