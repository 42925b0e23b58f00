/**
 * The streamed-chat client ceiling against one fake engine (tokensPerSecond 0: it answers at
 * once): `sm121 bench --url URL --concurrency 64 --json` when the CLI has it, else the minimal
 * client of bench/lib/client.ts. Client and server share this machine's CPUs, so the number is
 * the ceiling of the pair; the client's own CPU share says which side was the bottleneck.
 */
import { spawn } from "node:child_process";
import { cpus } from "node:os";
import { join } from "node:path";
import { REPO } from "../test/helpers/project";
import { miniLoad } from "./lib/client";
import { say } from "./lib/util";

export interface ChatRun {
  client: "sm121 bench" | "bench/lib/client.ts";
  concurrency: number;
  requests: number;
  maxTokens: number;
  completed: number;
  errors: number;
  durationS: number;
  requestsPerS: number;
  clientCpuPercent: number;
  ttftP50Ms?: number;
  e2eP50Ms?: number;
  e2eP99Ms?: number;
}

export interface ChatResult {
  url: string;
  cpus: number;
  runs: ChatRun[];
}

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, "bin", "sm121"), ...args], {
      cwd: REPO,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

async function hasBench(): Promise<boolean> {
  const h = await run(["--help"]);
  return /\bbench\b/.test(h.stdout) && h.stdout.includes("--url");
}

interface CliReport {
  completed: number;
  errors: number;
  durationS: number;
  requestsPerS: number;
  clientCpuPercent: number;
  ttftMs?: { p50: number };
  e2eMs?: { p50: number; p99: number };
}

async function one(
  url: string,
  model: string,
  useCli: boolean,
  concurrency: number,
  requests: number,
  maxTokens: number,
): Promise<ChatRun> {
  say(
    `chat: ${requests} streamed requests, concurrency ${concurrency}, ` +
      `max_tokens ${maxTokens} (${useCli ? "sm121 bench" : "bench/lib/client.ts"})`,
  );
  const base = { concurrency, requests, maxTokens };
  if (!useCli) {
    const r = await miniLoad(url, model, concurrency, requests, maxTokens);
    return {
      client: "bench/lib/client.ts",
      ...base,
      completed: r.completed,
      errors: r.errors,
      durationS: r.durationS,
      requestsPerS: r.requestsPerS,
      clientCpuPercent: r.clientCpuPercent,
    };
  }
  const r = await run([
    "bench",
    "--url",
    url,
    "--model",
    model,
    "--concurrency",
    String(concurrency),
    "--requests",
    String(requests),
    "--max-tokens",
    String(maxTokens),
    "--prompt-tokens",
    "16",
    "--json",
  ]);
  if (r.stdout.trim() === "") throw new Error(`sm121 bench printed nothing (exit ${String(r.code)}): ${r.stderr}`);
  const j = JSON.parse(r.stdout) as CliReport;
  return {
    client: "sm121 bench",
    ...base,
    completed: j.completed,
    errors: j.errors,
    durationS: j.durationS,
    requestsPerS: j.requestsPerS,
    clientCpuPercent: j.clientCpuPercent,
    ...(j.ttftMs !== undefined && { ttftP50Ms: j.ttftMs.p50 }),
    ...(j.e2eMs !== undefined && { e2eP50Ms: j.e2eMs.p50, e2eP99Ms: j.e2eMs.p99 }),
  };
}

/** `url`: a running fake engine. The first run is the target's; the others show the token cost. */
export async function measureChat(url: string, model: string, requests: number): Promise<ChatResult> {
  const useCli = await hasBench();
  const runs: ChatRun[] = [];
  // A short warm-up: the engine's and the client's JIT, the keep-alive sockets.
  await one(url, model, useCli, 64, 256, 16);
  runs.push(await one(url, model, useCli, 64, requests, 16));
  runs.push(await one(url, model, useCli, 64, requests, 128));
  if (useCli) runs.push(await one(url, model, false, 64, requests, 16));
  return { url, cpus: cpus().length, runs };
}
