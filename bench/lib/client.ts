/**
 * A minimal streaming chat client, used only when `sm121 bench --url` is not there: node:http
 * with one keep-alive Agent, C workers each sending its next request when the last one ends,
 * server-sent events split on blank lines, a request done at `data: [DONE]`.
 */
import * as http from "node:http";
import { performance } from "node:perf_hooks";

export interface MiniLoad {
  completed: number;
  errors: number;
  durationS: number;
  requestsPerS: number;
  chunks: number;
  clientCpuPercent: number;
}

export async function miniLoad(
  base: string,
  model: string,
  concurrency: number,
  requests: number,
  maxTokens: number,
): Promise<MiniLoad> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(`${base.replace(/\/+$/, "")}/v1/chat/completions`);
  let completed = 0;
  let errors = 0;
  let chunks = 0;
  const one = (i: number): Promise<void> =>
    new Promise((resolve) => {
      const body = JSON.stringify({
        model,
        messages: [{ role: "user", content: `${i} say something` }],
        max_tokens: maxTokens,
        stream: true,
        ignore_eos: true,
      });
      const req = http.request(
        {
          hostname: url.hostname,
          port: url.port,
          path: url.pathname,
          method: "POST",
          agent,
          headers: { "content-type": "application/json", "content-length": Buffer.byteLength(body) },
        },
        (res) => {
          res.setEncoding("utf8");
          let buf = "";
          let done = false;
          res.on("data", (s: string) => {
            buf += s;
            let at = buf.indexOf("\n\n");
            while (at !== -1) {
              const ev = buf.slice(0, at);
              buf = buf.slice(at + 2);
              if (ev.startsWith("data: [DONE]")) done = true;
              else if (ev.startsWith("data:")) chunks++;
              at = buf.indexOf("\n\n");
            }
          });
          res.on("end", () => {
            if (res.statusCode === 200 && done) completed++;
            else errors++;
            resolve();
          });
          res.on("error", () => {
            errors++;
            resolve();
          });
        },
      );
      req.on("error", () => {
        errors++;
        resolve();
      });
      req.end(body);
    });
  let next = 0;
  const worker = async () => {
    while (next < requests) await one(next++);
  };
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: Math.min(concurrency, requests) }, worker));
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  agent.destroy();
  return {
    completed,
    errors,
    durationS: Math.round(ms) / 1000,
    requestsPerS: Math.round((completed / (ms / 1000)) * 10) / 10,
    chunks,
    clientCpuPercent: Math.round(((cpu.user + cpu.system) / 1000 / ms) * 1000) / 10,
  };
}
