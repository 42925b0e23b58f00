/**
 * The simulated site's Docker: a real Docker Engine per node (its own data root, socket, host
 * name, containers), the site's registry under the recipes' image names, `docker save | ssh
 * docker load` between nodes, and the two stand-ins at the boundary of what this machine lacks:
 * the NVIDIA container hook (a GB10) and the OCI runtime wrapper for the sandbox's resource limits.

 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { buildImage, sshOk, sshScript } from "./site/exec";
import { endSite } from "./helpers/project";
import { startSite, type SimNode, type SimSite } from "./site/site";

const AT = allocate(__filename);

let site: SimSite;
let d1: SimNode;
let d2: SimNode;
const sh = (n: SimNode, script: string): Promise<string> => sshOk(site, n, `set -euo pipefail\n${script}`);
const VLLM = "nvcr.io/nvidia/vllm:25.10-py3";

beforeAll(async () => {
  site = await startSite({
    dir: fs.mkdtempSync(path.join(os.tmpdir(), "sm121-docker-")),
    nodes: ["d1", "d2"],
    ...AT.site(),
  });
  [d1, d2] = site.nodes as [SimNode, SimNode];
});

afterAll(() => endSite(site));

describe("a Docker Engine per node", () => {
  it("is the login's DOCKER_HOST, and what a script started with env -i reaches too", async () => {
    const sock = path.join(d1.root, "docker", "docker.sock");
    const out = await sh(
      d1,
      [
        'echo "$DOCKER_HOST"',
        "docker info --format '{{.Name}} {{.DockerRootDir}}'",
        'env -i HOME="$HOME" PATH="$PATH" docker info --format \'{{.Name}}\'',
      ].join("\n"),
    );
    expect(out).toBe(`unix://${sock}\nd1 ${path.join(d1.root, "docker", "data")}\nd1\n`);
    expect((await sh(d2, "docker info --format '{{.Name}}'")).trim()).toBe("d2");
  });

  it("runs its own containers only, named by the node, with the node's /etc/hosts", async () => {
    await sh(d1, "docker run -d --name only-here ubuntu:24.04 sleep 300 >/dev/null");
    expect(await sh(d2, "docker ps -aq --filter name=only-here")).toBe("");
    expect((await sh(d1, "docker ps --filter name=only-here --format '{{.Names}} {{.State}}'")).trim()).toBe(
      "only-here running",
    );
    const seen = await sh(d1, "docker run --rm --network host ubuntu:24.04 sh -c 'hostname; cat /etc/hosts'");
    expect(seen.split("\n")[0]).toBe("d1");
    expect(seen).toContain(`${d1.ip} d1\n`);
    await sh(d1, "docker rm -f only-here >/dev/null");
  });
});

describe("a site started by a user who is not root", () => {
  it("refuses at once, saying dockerd needs root, and makes nothing", () => {
    const dir = path.join(os.tmpdir(), `sm121-not-root-${process.pid}`);
    const site = path.join(__dirname, "..", "dist", "test", "site", "site.js");
    const start = `require(${JSON.stringify(site)}).startSite({ dir: ${JSON.stringify(dir)}, nodes: ["n1"] })`;
    const script = `${start}.catch((e) => { process.stderr.write(e.message); process.exitCode = 1; })`;
    const nobody = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    const r = spawnSync("setpriv", [...nobody, process.execPath, "-e", script], { encoding: "utf8" });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain("a real Docker Engine (dockerd), which needs root");
    expect(fs.existsSync(dir)).toBe(false);
  });
});

describe("the site's registry", () => {
  it("serves the site's images under the recipes' names, Docker Hub's through the mirror", async () => {
    const id = (await sh(d2, `docker image inspect --format '{{.Id}}' ${VLLM}`)).trim();
    await sh(d1, `docker image rm ${VLLM} lmsysorg/sglang:spark >/dev/null`);
    const pull = await sh(d1, `docker pull ${VLLM}; docker pull lmsysorg/sglang:spark`);
    expect(pull).toContain(`Status: Downloaded newer image for ${VLLM}`);
    expect(pull).toContain("Status: Downloaded newer image for lmsysorg/sglang:spark");
    expect((await sh(d1, `docker image inspect --format '{{.Id}}' ${VLLM}`)).trim()).toBe(id);
    const missing = await sshScript(site, d1, "docker pull nvcr.io/nvidia/vllm:99.99-py3");
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/manifest for nvcr\.io\/nvidia\/vllm:99\.99-py3 not found|manifest unknown/);
  });

  it("takes a push to registry.example from one node and gives it to another", async () => {
    const ref = "registry.example/sm121/pushed:1";
    const built = await buildImage(site, d1, ref, "FROM ubuntu:24.04\nLABEL sm121.test=pushed");
    await sh(d1, `docker push ${ref} >/dev/null`);
    await sh(d2, `docker pull -q ${ref} >/dev/null`);
    expect((await sh(d2, `docker image inspect --format '{{.Id}}' ${ref}`)).trim()).toBe(built);
  });
});

describe("docker save | ssh peer docker load (ImageSync's copy)", () => {
  it("moves an image with its ID; a torn archive is refused and loads nothing", async () => {
    const ref = "registry.example/sm121/copied:1";
    const built = await buildImage(site, d1, ref, "FROM ubuntu:24.04\nLABEL sm121.test=copied");
    await sh(d1, `docker save ${ref} | ssh ${d2.name} docker load`);
    expect((await sh(d2, `docker image inspect --format '{{.Id}}' ${ref}`)).trim()).toBe(built);
    await sh(d2, `docker image rm ${ref} >/dev/null`);
    const torn = await sshScript(site, d1, `docker save ${ref} | head -c 1000000 | ssh ${d2.name} docker load`);
    expect(torn.code).toBe(1);
    expect(torn.stderr).toMatch(/unexpected EOF/);
    expect((await sshScript(site, d2, `docker image inspect ${ref}`)).stderr).toContain(`No such image: ${ref}`);
  });
});

describe("the stand-ins", () => {
  it("--gpus all: the NVIDIA hook stand-in gives devices, NVIDIA_VISIBLE_DEVICES and a GB10 nvidia-smi", async () => {
    const out = await sh(
      d1,
      "docker run --rm --gpus all ubuntu:24.04 sh -c " +
        "'echo $NVIDIA_VISIBLE_DEVICES; ls /dev/nvidiactl /dev/nvidia0; nvidia-smi -L'",
    );
    expect(out).toBe(
      "all\n/dev/nvidia0\n/dev/nvidiactl\nGPU 0: NVIDIA GB10 (UUID: GPU-5b1a7c4e-0d2f-4c7b-9e41-6a0f3d2b8c11)\n",
    );
  });

  it("without --gpus, a container has no nvidia-smi and no GPU: the fake vLLM fails as vLLM does", async () => {
    const smi = await sshScript(site, d1, "docker run --rm ubuntu:24.04 nvidia-smi -L");
    expect(smi.code).toBe(127);
    expect(smi.stderr).toContain('exec: "nvidia-smi": executable file not found in $PATH');
    const engine = await sshScript(site, d1, "docker run --rm --network host vllm/vllm-openai:latest Qwen/Qwen3-8B");
    expect(engine.code).toBe(1);
    expect(engine.stderr).toContain("RuntimeError: Failed to infer device type");
  });

  // What sm121 renders for an RDMA container: above the sandbox's hard limits.
  it("--ulimit memlock=-1, nofile=1048576: the wrapper caps both, says so in the log, nothing else", async () => {
    const hard = (flag: string) => spawnSync("bash", ["-c", `ulimit -H ${flag}`], { encoding: "utf8" }).stdout.trim();
    const run = await sh(
      d1,
      "docker run --name rl --ulimit memlock=-1:-1 --ulimit nofile=1048576:1048576 ubuntu:24.04 " +
        "sh -c 'ulimit -H -l; ulimit -H -n' && docker logs rl 2>&1; docker rm rl >/dev/null",
    );
    const plain = await sh(
      d1,
      "docker run --name plain ubuntu:24.04 true && docker logs plain 2>&1; docker rm plain >/dev/null",
    );
    expect(plain).toBe("");
    const [memlock, nofile] = [hard("-l"), hard("-n")];
    expect(
      run.startsWith(`${memlock}\n${nofile === "unlimited" || Number(nofile) >= 1048576 ? "1048576" : nofile}\n`),
    ).toBe(true);
    const said = (type: string, asked: string, to: string) =>
      `RLIMIT_${type} soft ${asked} hard ${asked} lowered to soft ${to} hard ${to}, the sandbox's hard limit`;
    if (memlock === "unlimited") expect(run).not.toContain("RLIMIT_MEMLOCK");
    else expect(run).toContain(said("MEMLOCK", "18446744073709551615", String(Number(memlock) * 1024)));
    if (nofile === "unlimited" || Number(nofile) >= 1048576) expect(run).not.toContain("RLIMIT_NOFILE");
    else expect(run).toContain(said("NOFILE", "1048576", nofile));
  });
});
