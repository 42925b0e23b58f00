// The real LiteLLM proxy for the tests: the venv scripts/venvs.sh builds (litellm[proxy] from
// toolchain/python/litellm.txt, linked at ~/.cache/sm121/litellm), started offline on a free
// loopback port with the gateway file sm121 wrote, as docs/gateway.md tells an operator to start it.
// Stopped by its pid (with its start time, as the site's processes are).
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { needsRealParts } from "./lane";
import { isAlive, procStat, terminate, type ProcRecord } from "./procs";

export const LITELLM_BIN = path.join(process.env["HOME"] ?? "", ".cache", "sm121", "litellm", "bin");

export interface LiteLLM {
  url: string;
  /** The proxy's own key (LITELLM_MASTER_KEY): what a client sends it as its bearer key. */
  key: string;
  log: string;
  stop(): Promise<void>;
}

/** The proxy on 127.0.0.1:`port` (a test file's own, test/site/alloc.ts). */
export async function startLiteLLM(o: {
  dir: string;
  port: number;
  config: string;
  key: string;
  /** More of the proxy's environment (SM121_API_KEY: the engines' key the gateway file reads). */
  env?: Record<string, string>;
}): Promise<LiteLLM> {
  needsRealParts("The LiteLLM proxy");
  const bin = path.join(LITELLM_BIN, "litellm");
  if (!fs.existsSync(bin)) {
    throw new Error(`test site: ${bin} is missing: scripts/venvs.sh (run by scripts/setup.sh) installs it`);
  }
  fs.mkdirSync(o.dir, { recursive: true });
  const port = o.port;
  const logFile = path.join(o.dir, "litellm.log");
  const log = fs.openSync(logFile, "a");
  // Offline: the model cost map from the package itself, no telemetry.
  const env = {
    ...process.env,
    LITELLM_LOCAL_MODEL_COST_MAP: "True",
    LITELLM_MASTER_KEY: o.key,
    LITELLM_TELEMETRY: "False",
    ...o.env,
  };
  const argv = ["--config", o.config, "--host", "127.0.0.1", "--port", String(port)];
  const child = spawn(bin, argv, { stdio: ["ignore", log, log], env });
  fs.closeSync(log);
  const pid = child.pid ?? 0;
  const rec: ProcRecord = { pid, start: procStat(pid)?.start ?? null, what: "litellm" };
  const url = `http://127.0.0.1:${port}`;
  const stop = () => terminate([rec], 10_000);
  for (const end = Date.now() + 120_000; ; await new Promise((r) => setTimeout(r, 200))) {
    const tail = () => fs.readFileSync(logFile, "utf8").slice(-3000);
    if (!isAlive(pid, rec.start)) throw new Error(`test site: the LiteLLM proxy exited:\n${tail()}`);
    const ready = await fetch(`${url}/health/readiness`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ready) break;
    if (Date.now() > end) {
      await stop();
      throw new Error(`test site: the LiteLLM proxy was not ready within 120 s:\n${tail()}`);
    }
  }
  return { url, key: o.key, log: logFile, stop };
}
