// Running things on simulated nodes: through the real ssh client (as sm121 does)
// or directly with the node's environment (for shims in unit tests).
import { spawn } from "node:child_process";
import type { SimNode, SimSite } from "./site";
import { nodeEnv } from "./site";

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** argv of the system ssh client for a node: the site key, the site known_hosts, no user config. */
export function sshArgv(
  site: Pick<SimSite, "clientKey" | "knownHosts" | "user">,
  node: Pick<SimNode, "ip" | "sshPort">,
  knownHosts?: string,
): string[] {
  return [
    "ssh",
    "-F",
    "/dev/null",
    "-i",
    site.clientKey,
    "-o",
    "IdentitiesOnly=yes",
    "-o",
    `UserKnownHostsFile=${knownHosts ?? site.knownHosts}`,
    "-o",
    "GlobalKnownHostsFile=/dev/null",
    "-o",
    "StrictHostKeyChecking=yes",
    "-o",
    "BatchMode=yes",
    "-o",
    "ConnectTimeout=10",
    "-p",
    String(node.sshPort),
    `${site.user}@${node.ip}`,
  ];
}

function collect(
  cmd: string,
  args: string[],
  input: string,
  env: NodeJS.ProcessEnv | undefined,
  timeoutMs: number,
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(
        new Error(
          `${cmd} ${args.join(" ")} did not finish within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`,
        ),
      );
    }, timeoutMs);
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString("utf8")));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString("utf8")));
    child.on("error", (err) => {
      clearTimeout(timer);
      reject(err);
    });
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(input);
  });
}

/** `ssh node bash -s` with the script on stdin, as sm121 runs its node scripts. */
export function sshScript(
  site: SimSite,
  node: SimNode,
  script: string,
  opts: { knownHosts?: string; timeoutMs?: number } = {},
): Promise<RunResult> {
  const [cmd, ...args] = sshArgv(site, node, opts.knownHosts);
  return collect(cmd ?? "ssh", [...args, "bash -s"], script, process.env, opts.timeoutMs ?? 60000);
}

/** sshScript that must succeed: its stdout, or an error with the node, the exit code and stderr. */
export async function sshOk(site: SimSite, node: SimNode, script: string): Promise<string> {
  const r = await sshScript(site, node, script);
  if (r.code !== 0)
    throw new Error(
      `${node.name}: exit ${String(r.code)}\n--- script\n${script}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`,
    );
  return r.stdout;
}

/** Run a script with bash directly, in the environment of a login on the node. */
export function localScript(site: SimSite, node: SimNode, script: string, timeoutMs = 60000): Promise<RunResult> {
  return collect("bash", ["-s"], script, nodeEnv(site, node), timeoutMs);
}

/**
 * Builds an image on the node with the real `docker build` from a Dockerfile alone (no context,
 * so no COPY: FROM one of the site's images, LABEL, ENTRYPOINT, ...), tags it `ref`; its ID.
 */
export async function buildImage(site: SimSite, node: SimNode, ref: string, dockerfile: string): Promise<string> {
  const script = `DOCKER_BUILDKIT=0 docker build -q -t ${ref} - <<'SM121_DOCKERFILE'\n${dockerfile}\nSM121_DOCKERFILE`;
  const out = await sshOk(site, node, script);
  const id = out.trim().split("\n").pop() ?? "";
  if (!/^sha256:[0-9a-f]{64}$/.test(id)) throw new Error(`${node.name}: docker build of ${ref}: no image ID:\n${out}`);
  return id;
}
