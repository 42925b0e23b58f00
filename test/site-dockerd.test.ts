/**
 * The simulated node's docker CLI (test/site/shims/docker-cli) and the site's docker daemon
 * (shims/dockerd.js): the commands the daemon answers print exactly what docker.js prints on its
 * own (stdout, stderr, exit code), the daemon really answers them (rm too, of containers that do
 * not run), and the CLI runs a command itself when it would wait or the daemon is gone.
 */
import { execFile, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { dockerdProcesses } from "./site/dockerd";
import { terminate } from "./site/procs";
import { startSite, type SimSite } from "./site/site";

let site: SimSite;
let root: string;

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** The node's own `docker` (bin/docker: the node's identity, then docker-cli), from an empty environment. */
function nodeDocker(args: string[]): Run {
  const r = spawnSync(path.join(root, "bin", "docker"), args, { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

/** docker.js in a process of its own, as before the daemon. */
function ownProcess(args: string[]): Run {
  const r = spawnSync(path.join(site.dir, "shims", "docker.js"), args, { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "", SIM_NODE_ROOT: root, SIM_SITE_DIR: site.dir } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

beforeAll(async () => {
  site = await startSite({ dir: fs.mkdtempSync(path.join(os.tmpdir(), "sm121-dockerd-")), nodes: ["dk1"], firstIp: 236, sshPort: 2597 });
  root = site.nodes[0]?.root ?? "";
  const started = nodeDocker(["run", "-d", "--name", "c1", "--label", "sm121.deployment=t", "ubuntu:24.04", "sleep", "300"]);
  expect(started.err).toBe("");
  expect(started.code).toBe(0);
}, 60_000);

afterAll(async () => {
  await site.stop();
  fs.rmSync(site.dir, { recursive: true, force: true });
});

const AT_ONCE = [
  ["inspect", "c1"],
  ["inspect", "-f", "{{.State.Running}} {{.State.StartedAt}} {{.Name}}", "c1"],
  ["inspect", "-f", "{{.State.Running}}", "c1", "nope"],
  ["inspect", "nope"],
  ["inspect", "--bogus", "c1"],
  ["container", "inspect", "c1"],
  ["image", "inspect", "ubuntu:24.04"],
  ["image", "inspect", "no/such:image"],
  ["ps"],
  ["ps", "-a", "--no-trunc", "--format", '{{.Names}}|{{.Label "sm121.deployment"}}|{{.Command}}'],
  ["container", "ls", "-q"],
  ["images"],
  ["version"],
  ["rm", "nope"],
  ["rm", "-f", "nope"],
  ["rm", "c1"],
  ["rm", "--bogus", "c1"],
];

describe("the site's docker daemon", () => {
  it.each(AT_ONCE)("answers docker %s exactly as docker.js does on its own", (...args: string[]) => {
    // ps says "Up 1 second": its answer is docker.js's just before or just after it.
    const before = ownProcess(args);
    const daemon = nodeDocker(args);
    const after = ownProcess(args);
    expect([before, after]).toContainEqual(daemon);
    expect(before.out + before.err).not.toBe("");
  });

  it("is what answers them: with docker.js not executable, inspect still works and run does not", () => {
    const cli = path.join(site.dir, "shims", "docker.js");
    const expected = ownProcess(["inspect", "-f", "{{.State.Running}}", "c1"]);
    fs.chmodSync(cli, 0o644);
    try {
      expect(nodeDocker(["inspect", "-f", "{{.State.Running}}", "c1"])).toEqual(expected);
      expect(expected.out).toBe("true\n");
      expect(nodeDocker(["logs", "c1"]).code).toBe(126);
    } finally {
      fs.chmodSync(cli, 0o755);
    }
  });

  it("removes a container that does not run, and leaves rm -f of a running one (it waits) to docker.js", async () => {
    expect(nodeDocker(["run", "-d", "--name", "c2", "ubuntu:24.04", "true"]).code).toBe(0);
    for (let i = 0; i < 100 && nodeDocker(["inspect", "-f", "{{.State.Running}}", "c2"]).out !== "false\n"; i++) await new Promise((r) => setTimeout(r, 50));
    const cli = path.join(site.dir, "shims", "docker.js");
    fs.chmodSync(cli, 0o644);
    try {
      expect(nodeDocker(["rm", "c2"])).toEqual({ code: 0, out: "c2\n", err: "" });
      expect(nodeDocker(["inspect", "c2"]).code).toBe(1);
      // The daemon does not answer it, and has changed nothing: c1 still runs.
      expect(nodeDocker(["rm", "-f", "c1"]).code).toBe(126);
      expect(nodeDocker(["inspect", "-f", "{{.State.Running}}", "c1"]).out).toBe("true\n");
    } finally {
      fs.chmodSync(cli, 0o755);
    }
  });

  it("starts the shims' Node.js (docker.js, the supervisor) with the site's compile cache", () => {
    // beforeAll's run: every Node.js start of the shims writes its compiled modules there.
    const cache = path.join(site.dir, "run", "node-compile-cache");
    const entries = fs.readdirSync(cache).flatMap((v) => fs.readdirSync(path.join(cache, v)));
    expect(entries.length).toBeGreaterThan(5);
  });

  it("runs the command itself when what answers on the daemon's port is not the daemon", async () => {
    const portFile = path.join(site.dir, "run", "dockerd.port");
    const saved = fs.readFileSync(portFile, "utf8");
    // Another process on the port a daemon once had: it takes the connection and resets it.
    const other = net.createServer((sock) => sock.resetAndDestroy());
    await new Promise<void>((resolve) => other.listen(0, "127.0.0.1", resolve));
    try {
      fs.writeFileSync(portFile, `${(other.address() as net.AddressInfo).port}\n`);
      // Not spawnSync: this process must stay free to take and reset the connection.
      const r = await new Promise<Run>((resolve) => {
        execFile(path.join(root, "bin", "docker"), ["inspect", "-f", "{{.State.Running}} {{.Name}}", "c1"], { encoding: "utf8", env: { PATH: process.env["PATH"] ?? "" } }, (e, out, err) => resolve({ code: e === null ? 0 : typeof e.code === "number" ? e.code : null, out, err }));
      });
      expect(r).toEqual({ code: 0, out: "true /c1\n", err: "" });
    } finally {
      fs.writeFileSync(portFile, saved);
      other.close();
    }
  });

  it("leaves the command to docker.js once it is gone, and takes its port file along", async () => {
    const before = nodeDocker(["inspect", "-f", "{{.State.Running}} {{.Name}}", "c1"]);
    await terminate(dockerdProcesses(site.dir), 2000);
    expect(fs.existsSync(path.join(site.dir, "run", "dockerd.port"))).toBe(false);
    expect(nodeDocker(["inspect", "-f", "{{.State.Running}} {{.Name}}", "c1"])).toEqual(before);
    expect(before).toEqual({ code: 0, out: "true /c1\n", err: "" });
  });
});
