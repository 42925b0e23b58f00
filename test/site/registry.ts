// The site's container registry: Debian's docker-registry (the distribution registry 2.8) on the
// site's network, serving a copy of the site images' storage (./images.ts). The nodes' Docker
// Engines reach it under the registries' own names (nvcr.io, ghcr.io, ...; their /etc/hosts) as
// insecure registries, over plain HTTP on port 80, and as the mirror of Docker Hub.
import * as fs from "node:fs";
import * as http from "node:http";
import * as net from "node:net";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { isAlive, procStat, type ProcRecord } from "./procs";

export const REGISTRY = "docker-registry ";

export interface RegistryStart {
  storage: string;
  config: string;
  log: string;
  host: string;
  /** 0: a free port of the host. */
  port: number;
}

export interface Registry {
  proc: ProcRecord;
  /** host:port, or the host alone on port 80 (as docker names an insecure registry there). */
  address: string;
}

function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, host, () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

function answers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host, port, path: "/v2/", timeout: 1000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on("timeout", () => req.destroy());
    req.on("error", () => resolve(false));
  });
}

/** Starts the registry detached and waits until it answers /v2/. */
export async function startRegistry(s: RegistryStart): Promise<Registry> {
  const port = s.port === 0 ? await freePort(s.host) : s.port;
  fs.mkdirSync(s.storage, { recursive: true });
  fs.writeFileSync(
    s.config,
    [
      "version: 0.1",
      "log: { level: warn, formatter: text }",
      `storage: { filesystem: { rootdirectory: ${JSON.stringify(s.storage)} }, delete: { enabled: true } }`,
      `http: { addr: "${s.host}:${port}" }`,
      "",
    ].join("\n"),
  );
  const out = fs.openSync(s.log, "a");
  const child = spawn("docker-registry", ["serve", s.config], { detached: true, stdio: ["ignore", out, out] });
  fs.closeSync(out);
  child.unref();
  const pid = child.pid;
  if (pid === undefined)
    throw new Error(
      "test site: could not start docker-registry (install the Debian package docker-registry; scripts/setup.sh does)",
    );
  const proc = { pid, start: procStat(pid)?.start ?? null, what: `${REGISTRY}${s.config}` };
  const deadline = Date.now() + 15_000;
  while (!(await answers(s.host, port))) {
    if (!isAlive(pid, proc.start))
      throw new Error(`test site: docker-registry exited at startup:\n${fs.readFileSync(s.log, "utf8").slice(-2000)}`);
    if (Date.now() > deadline)
      throw new Error(`test site: docker-registry on ${s.host}:${port} did not answer within 15 s (log: ${s.log})`);
    await new Promise((r) => setTimeout(r, 20));
  }
  return { proc, address: port === 80 ? s.host : `${s.host}:${port}` };
}

/**
 * A site's own copy of the images' storage: the blobs (content-addressed, written once, never
 * changed in place) as hard links, everything else (tags, links the registry rewrites) copied.
 */
export function copyStorage(from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true });
  const walk = (src: string, dst: string, blobs: boolean): void => {
    fs.mkdirSync(dst, { recursive: true });
    for (const e of fs.readdirSync(src, { withFileTypes: true })) {
      const s = path.join(src, e.name);
      const d = path.join(dst, e.name);
      if (e.isDirectory()) walk(s, d, blobs || e.name === "blobs");
      else if (blobs) fs.linkSync(s, d);
      else fs.copyFileSync(s, d);
    }
  };
  walk(from, to, false);
}
