// The simulated test site itself: sshd and a real Docker Engine per node, the fake
// vLLM in the site's images, multi-node rendezvous, gr8's sysctl prerequisite,
// DGPP provisioning, and that stop() leaves nothing running.
// Addresses and ports come from test/site/alloc.ts; gr8's 8100 and DGPP's 18080 are those
// engines' own defaults, on this file's own node addresses. The site dir is removed
// afterwards unless SM121_KEEP_SITE is set.
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allocate } from "./site/alloc";
import { setEngineBehaviour, setEngineProofs, startSite, stopStaleSite, type SimNode, type SimSite } from "./site/site";
import { sshOk, sshScript } from "./site/exec";
import { inEngineContainer } from "./site/procs";
import { makeScriptRecipe } from "./site/recipe";
import { modelsIn } from "./helpers/json";

const AT = allocate(__filename);
/** The engines' ports: the script recipe's binds 127.0.0.1, the others a node's address. */
const PORT = {
  script: AT.port(0),
  q8: AT.port(1),
  bad: AT.port(2),
  head: AT.port(3),
  tmux: AT.port(4),
  sglang: AT.port(5),
  master: AT.port(6),
  dgppRdzv: AT.port(7),
  distInit: AT.port(8),
};

// One fixed dir for this file: startSite() first ends what a crashed earlier run left there.
const DIR = fs.mkdtempSync(path.join(os.tmpdir(), "sm121-site-selftest-"));
let site: SimSite;
let spark1: SimNode;
let spark2: SimNode;

const sh = (node: SimNode, script: string): Promise<string> => sshOk(site, node, `set -euo pipefail\n${script}`);

async function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string } | null> {
  try {
    const res = await fetch(url, { headers, signal: AbortSignal.timeout(3000) });
    return { status: res.status, body: await res.text() };
  } catch {
    return null;
  }
}

async function waitFor(url: string, timeoutMs = 20000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const r = await get(url);
    if (r !== null && r.status === 200) return r.body;
    await new Promise((res) => setTimeout(res, 100));
  }
  throw new Error(`${url} not ready within ${timeoutMs} ms`);
}

/**
 * What the site left: processes whose environment or command line mention the site directory
 * (sshd, dockerd, containerd, shims), processes in a container of a node's Docker Engine, and
 * mounts under the site directory that any process still sees.
 */
function siteLeftovers(): string[] {
  const out: string[] = [];
  const dataRoots = [spark1, spark2].map((n) => path.join(n.root, "docker", "data"));
  for (const pid of fs.readdirSync("/proc").filter((n) => /^\d+$/.test(n))) {
    if (Number(pid) === process.pid) continue;
    const read = (f: string): string => {
      try {
        return fs.readFileSync(`/proc/${pid}/${f}`, "utf8");
      } catch {
        return "";
      }
    };
    const cmd = read("cmdline");
    const inContainer = dataRoots.some((d) => inEngineContainer(Number(pid), d));
    const named = cmd.includes(DIR) || read("environ").includes(`SIM_SITE_DIR=${DIR}`);
    if (named || inContainer) out.push(`${pid}: ${cmd.replace(/\0/g, " ")}`);
    for (const m of read("mountinfo")
      .split("\n")
      .filter((l) => l.includes(DIR)))
      out.push(`${pid} sees a mount: ${m}`);
  }
  return out;
}

beforeAll(async () => {
  site = await startSite({ dir: DIR, nodes: ["spark1", "spark2"], ...AT.site() });
  [spark1, spark2] = site.nodes as [SimNode, SimNode];
});

afterAll(async () => {
  await stopStaleSite(DIR); // also when startSite failed
  if (process.env.SM121_KEEP_SITE === undefined) fs.rmSync(DIR, { recursive: true, force: true });
});

describe("simulated site", () => {
  it("gives every ssh login its node's environment, and lets nodes ssh to each other", async () => {
    for (const node of [spark1, spark2]) {
      const out = await sh(
        node,
        'echo "$HOME|$PWD|$SIM_NODE_NAME|$SIM_NODE_IP|$TMUX_TMPDIR|$TMPDIR|$SIM_SITE_DIR|$PATH|$(hostname)"',
      );
      const pathVar = `${node.root}/bin:${site.nodeBin}:/usr/local/bin:/usr/bin:/bin`;
      expect(out.trim()).toBe(
        [
          node.home,
          node.home,
          node.name,
          node.ip,
          `${node.root}/tmp`,
          `${node.root}/tmp`,
          DIR,
          pathVar,
          node.name,
        ].join("|"),
      );
    }
    const hop = await sh(spark1, `ssh -n ${spark2.ip} 'echo "$SIM_NODE_NAME $HOME"'; ssh -n spark2 true`);
    expect(hop.trim()).toBe(`spark2 ${spark2.home}`);
    const tmux = await sh(spark1, "tmux new-session -d -s probe 'sleep 600'; tmux ls -F '#{socket_path}'");
    expect(tmux.trim()).toMatch(new RegExp(`^${spark1.root}/tmp/tmux-\\d+/default$`));
  });

  it("refuses a login whose known_hosts holds another node's key", async () => {
    const other =
      fs
        .readFileSync(site.knownHosts, "utf8")
        .split("\n")
        .find((l) => l.startsWith(`[${spark2.ip}]`)) ?? "";
    const wrong = path.join(DIR, "wrong_known_hosts");
    fs.writeFileSync(wrong, `${other.replace(`[${spark2.ip}]`, `[${spark1.ip}]`)}\n`);
    const r = await sshScript(site, spark1, "echo in", { knownHosts: wrong });
    expect(r.code).toBe(255);
    expect(r.stderr).toContain("Host key verification failed");
    expect(r.stdout).not.toContain("in");
  });

  it("runs the vLLM contract in a docker container until docker stop", async () => {
    const run = await sh(
      spark1,
      `docker run -d --name vq --label sm121.deployment=t1 --gpus all --network host --ipc host \\
      vllm/vllm-openai:latest Qwen/Qwen3-8B --served-model-name q8 --host ${spark1.ip} --port ${PORT.q8} \\
      --max-model-len 32768`,
    );
    expect(run.trim()).toMatch(/^[0-9a-f]{64}$/);
    expect(modelsIn(await waitFor(`http://${spark1.ip}:${PORT.q8}/v1/models`))[0]).toMatchObject({
      id: "q8",
      max_model_len: 32768,
    });
    const ps = await sh(
      spark1,
      "docker ps --filter label=sm121.deployment=t1 --format '{{.Names}} {{.State}} " +
        '{{.Label "sm121.deployment"}}\'; docker ps --filter label=sm121.deployment=other -q',
    );
    expect(ps.trim()).toBe("vq running t1");
    const pid = Number((await sh(spark1, "docker inspect -f '{{.State.Pid}}' vq")).trim());
    expect(fs.existsSync(`/proc/${pid}`)).toBe(true);
    expect(await sh(spark1, "nvidia-smi --query-compute-apps=pid,process_name --format=csv,noheader")).toContain(
      `${pid}, VLLM::EngineCore`,
    );
    expect(await sh(spark2, "nvidia-smi --query-compute-apps=pid --format=csv,noheader")).toBe("");
    const logs = await sh(spark1, "docker logs vq 2>&1");
    expect(logs).toMatch(/INFO .*\[kv_cache_utils\.py:\d+\] GPU KV cache size: [\d,]+ tokens/);
    expect(logs).toContain("Application startup complete.");
    await sh(spark1, "docker stop vq");
    expect(fs.existsSync(`/proc/${pid}`)).toBe(false);
    expect((await sh(spark1, "docker ps -a --filter name=^vq$ --format '{{.Status}}'")).trim()).toMatch(
      /^Exited \(0\) /,
    );
    expect(await get(`http://${spark1.ip}:${PORT.q8}/health`)).toBeNull();
    const again = await sshScript(
      site,
      spark1,
      "docker run -d --name vq --gpus all --network host vllm/vllm-openai:latest Qwen/Qwen3-8B",
    );
    expect(again.code).toBe(125);
    expect(again.stderr).toContain('The container name "/vq" is already in use');
  });

  it("fails a misspelt engine flag with the engine's own message in docker logs", async () => {
    await sh(
      spark1,
      `docker run -d --name bad --gpus all --network host \\
      vllm/vllm-openai:latest Qwen/Qwen3-8B --tensor-paralel-size 1 --port ${PORT.bad}
      for i in $(seq 50); do [ "$(docker inspect -f '{{.State.Running}}' bad)" = false ] && break; sleep 0.1; done`,
    );
    expect((await sh(spark1, "docker inspect -f '{{.State.Status}} {{.State.ExitCode}}' bad")).trim()).toBe("exited 2");
    expect(await sh(spark1, "docker logs bad 2>&1")).toContain(
      "vllm serve: error: unrecognized arguments: --tensor-paralel-size 1",
    );
  });

  // Why sm121's preflight checks every mount source: Docker does not refuse a missing one.
  it("creates a missing -v source as an empty directory, as Docker does", async () => {
    const src = path.join(spark1.root, "no", "such", "dir");
    // On the host's network, as every container of the site runs: a container on Docker's default
    // network makes the CLI warn on stderr where the machine's net.ipv4.ip_forward is 0.
    const mount = await sshScript(site, spark1, `docker run --rm --network host -v ${src}:/x ubuntu:24.04 ls -A /x`);
    expect([mount.code, mount.stdout, mount.stderr]).toEqual([0, "", ""]);
    expect(fs.readdirSync(src)).toEqual([]);
  });

  it("makes a 2-node vLLM head ready only after its headless worker joined; ends it when the worker goes", async () => {
    const common =
      "--gpus all --network host --ipc host vllm/vllm-openai:latest Qwen/Qwen3-8B -tp 2 --nnodes 2 " +
      `--master-addr ${spark1.ip} --master-port ${PORT.master}`;
    await sh(
      spark1,
      `docker run -d --name head -e VLLM_HOST_IP=${spark1.ip} ${common} ` +
        `--node-rank 0 --host ${spark1.ip} --port ${PORT.head}`,
    );
    // Once the head says it waits for its worker, it must not answer yet.
    const waiting = `Waiting for 1 worker node(s) to join at ${spark1.ip}:${PORT.master}`;
    await sh(
      spark1,
      `for i in $(seq 100); do docker logs head 2>&1 | grep -qF ${JSON.stringify(waiting)} && break; sleep 0.1; done`,
    );
    expect(await sh(spark1, "docker logs head 2>&1")).toContain(waiting);
    expect(await get(`http://${spark1.ip}:${PORT.head}/health`)).toBeNull();
    const noIp = await sh(
      spark2,
      `docker run -d --name w0 ${common} --node-rank 1 --headless >/dev/null; docker wait w0 >/dev/null; ` +
        "docker logs w0 2>&1; docker rm -f w0 >/dev/null",
    );
    expect(noIp).toContain(`VLLM_HOST_IP=(unset) is not this node's address (${spark2.ip})`);
    await sh(spark2, `docker run -d --name worker -e VLLM_HOST_IP=${spark2.ip} ${common} --node-rank 1 --headless`);
    expect(modelsIn(await waitFor(`http://${spark1.ip}:${PORT.head}/v1/models`))[0]?.id).toBe("Qwen/Qwen3-8B");
    expect(await sh(spark1, "docker logs head 2>&1")).toContain(`Worker node rank 1 (${spark2.ip}) joined`);
    await sh(spark2, "docker stop -t 2 worker");
    await sh(
      spark1,
      "for i in $(seq 50); do [ \"$(docker inspect -f '{{.State.Running}}' head)\" = false ] && break; sleep 0.1; done",
    );
    expect((await sh(spark1, "docker inspect -f '{{.State.ExitCode}}' head")).trim()).toBe("1");
    expect(await sh(spark1, "docker logs head 2>&1")).toContain(
      `NCCL error: connection to node rank 1 (${spark2.ip}) lost`,
    );
  });

  it("refuses gr8 until vm.compaction_proactiveness is 0 (set with sudo -n sysctl)", async () => {
    const run =
      "docker run -d --name g8 --gpus all --network host ghcr.io/kindlingai/gr8:latest glm53 up " +
      `--model zai-org/GLM-5.3 --tp 1 --peers ${spark1.ip}`;
    await sh(
      spark1,
      `${run} >/dev/null; docker wait g8 >/dev/null; docker logs g8 2>&1; docker rm -f g8 >/dev/null`,
    ).then((out) => {
      expect(out).toContain("gr8: vm.compaction_proactiveness must be 0 (got 20)");
    });
    const denied = await sshScript(site, spark1, "sysctl -w vm.compaction_proactiveness=0");
    expect(denied.code).not.toBe(0);
    await sh(spark1, `sudo -n sysctl -w vm.compaction_proactiveness=0 && ${run}`);
    expect(modelsIn(await waitFor(`http://${spark1.ip}:8100/v1/models`))[0]?.id).toBe("zai-org/GLM-5.3");
    expect(fs.readFileSync(path.join(spark1.root, "var", "log", "sysctl.log"), "utf8")).toMatch(
      /vm\.compaction_proactiveness=0 \(was 20\)/,
    );
    await sh(spark1, "docker rm -f g8");
  });

  it("provisions DGPP from the bare repo on rank 0 for both nodes, serves it with up, stops it with down", async () => {
    const rev = site.dgppRevs[1] ?? "";
    const short = rev.slice(0, 7);
    const cluster = { model: "Qwen/Qwen3.8-27B-NVFP4", world_size: 2, http: { port: 18080 }, engine: { tp: 2 } };
    for (const node of [spark1, spark2]) {
      fs.mkdirSync(path.join(node.home, "dgpp"), { recursive: true });
      fs.writeFileSync(path.join(node.home, "dgpp", "cluster.json"), JSON.stringify(cluster));
      fs.writeFileSync(
        path.join(node.home, "dgpp", ".env"),
        `DGPP_NODES="${spark1.ip} ${spark2.ip}"\nDGPP_SSH_USER=${site.user}\nDGPP_RDZV_PORT=${PORT.dgppRdzv}\n`,
      );
    }
    const install = await sh(
      spark1,
      `cd ~/dgpp && git init -q && git remote add origin ${site.dgppRepo}
      git fetch -q origin && git checkout -q ${rev}
      scripts/release.sh >/dev/null
      scripts/dgpp-cluster install dist/dgpp-*.tar.zst --config ~/dgpp/cluster.json`,
    );
    expect(install).toContain(`installed release ${short} on spark1`);
    expect(install).toContain(`installed release ${short} on spark2`);
    const calls = fs.readFileSync(path.join(DIR, "dgpp-calls.log"), "utf8");
    expect(calls).toMatch(/ spark1 install dist\/dgpp-\w+\.tar\.zst --config /);
    expect(calls).toMatch(/ spark2 install dist\/dgpp-\w+\.tar\.zst --config \S+ --local/);
    expect(fs.existsSync(path.join(spark2.home, "dgpp", "releases", short, "bin", "dgpp-manager"))).toBe(true);
    const twice = await sshScript(
      site,
      spark1,
      "cd ~/dgpp && scripts/dgpp-cluster install dist/dgpp-*.tar.zst --config cluster.json",
    );
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain(`release already exists: ${short}`);
    expect((await sh(spark1, "cd ~/dgpp && scripts/dgpp-cluster releases --config cluster.json")).trim()).toBe(short);
    const early = await sshScript(site, spark1, "cd ~/dgpp && scripts/dgpp-cluster up --config cluster.json");
    expect(early.code).toBe(1);
    expect(early.stderr).toContain("python3 scripts/download_model.py --config");
    await sh(
      spark1,
      "cd ~/dgpp && python3 scripts/download_model.py --config cluster.json && scripts/dgpp-cluster up " +
        "--config cluster.json",
    );
    expect(modelsIn(await waitFor(`http://${spark1.ip}:18080/v1/models`))[0]?.id).toBe("Qwen/Qwen3.8-27B-NVFP4");
    expect(await sh(spark2, "nvidia-smi --query-compute-apps=process_name --format=csv,noheader")).toContain(
      "dgpp-worker",
    );
    await sh(spark1, "cd ~/dgpp && scripts/dgpp-cluster down --config cluster.json");
    expect(await get(`http://${spark1.ip}:18080/health`)).toBeNull();
    await sh(
      spark2,
      'for i in $(seq 50); do [ -z "$(nvidia-smi --query-compute-apps=pid --format=csv,noheader)" ] && break; ' +
        "sleep 0.1; done",
    );
    expect(await sh(spark2, "nvidia-smi --query-compute-apps=pid --format=csv,noheader")).toBe("");
  });

  it("runs the script recipe's start.sh and stop.sh with the node's docker", async () => {
    const dir = makeScriptRecipe(spark2, "recipes/qwen38");
    fs.mkdirSync(path.join(spark2.home, ".cache", "huggingface"), { recursive: true });
    const env = fs.readFileSync(path.join(dir, ".env.sample"), "utf8").replace("PORT=8000", `PORT=${PORT.script}`);
    fs.writeFileSync(path.join(dir, ".env"), `${env}API_KEY=sekrit\n`);
    const out = await sh(spark2, "cd ~/recipes/qwen38 && ./start.sh");
    expect(out).toContain(`qwen38-flash is ready on port ${PORT.script}`);
    expect((await get(`http://127.0.0.1:${PORT.script}/v1/models`))?.status).toBe(401);
    const ok = await get(`http://127.0.0.1:${PORT.script}/v1/models`, { authorization: "Bearer sekrit" });
    expect(modelsIn(ok?.body ?? "{}")[0]).toMatchObject({ id: "qwen38-flash", max_model_len: 262144 });
    const args = await sh(spark2, "docker inspect -f '{{json .Args}}' qwen38-flash");
    expect(args).toContain('"--chat-template","/recipe/files/chat-template/chat_template.jinja"');
    await sh(spark2, 'cd ~/recipes/qwen38 && ./stop.sh && test -z "$(docker ps -aq --filter name=qwen38)"');
  });

  it("follows fake-engine.json (slow start, crash) and prints the proof texts, in tmux", async () => {
    setEngineBehaviour(spark2, { startDelayS: 3, mode: "crash-after", crashAfterS: 1 });
    setEngineProofs(spark2, ["MTP draft head: FP8 rowwise copy engaged"]);
    const engLog = path.join(spark2.home, "eng.log");
    const logged = () => (fs.existsSync(engLog) ? fs.readFileSync(engLog, "utf8") : "");
    await sh(
      spark2,
      "tmux new-session -d -s eng " +
        `"python3 -m vllm.entrypoints.openai.api_server --model Qwen/Qwen3-8B ` +
        `--host ${spark2.ip} --port ${PORT.tmux} > ~/eng.log 2>&1"`,
    );
    // The slow start: once it has begun to load (its proof is out) it serves nothing until the weights are in.
    for (let i = 0; i < 400 && !logged().includes("MTP draft head"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(logged()).toContain("MTP draft head");
    expect(await get(`http://${spark2.ip}:${PORT.tmux}/health`)).toBeNull();
    expect(logged()).not.toContain("Loading weights took");
    await waitFor(`http://${spark2.ip}:${PORT.tmux}/health`);
    expect(logged()).toContain("Loading weights took");
    await sh(
      spark2,
      "for i in $(seq 40); do tmux has-session -t eng 2>/dev/null || break; sleep 0.1; done; " +
        "! tmux has-session -t eng 2>/dev/null",
    );
    const log = fs.readFileSync(path.join(spark2.home, "eng.log"), "utf8");
    expect(log).toContain("MTP draft head: FP8 rowwise copy engaged");
    expect(log).toContain("simulated crash-after");
    setEngineBehaviour(spark2, null);
  });

  it("serves SGLang from rank 0 only, with rank 1 answering /health", async () => {
    const args =
      "--model-path Qwen/Qwen3-8B --tp 2 --nnodes 2 " +
      `--dist-init-addr ${spark1.ip}:${PORT.distInit} --port ${PORT.sglang}`;
    await sh(
      spark1,
      `SGLANG_HOST_IP=${spark1.ip} nohup python3 -m sglang.launch_server ${args} --node-rank 0 ` +
        `--host ${spark1.ip} > ~/sgl.log 2>&1 < /dev/null &`,
    );
    await sh(
      spark2,
      `SGLANG_HOST_IP=${spark2.ip} nohup python3 -m sglang.launch_server ${args} --node-rank 1 ` +
        `--host ${spark2.ip} > ~/sgl.log 2>&1 < /dev/null &`,
    );
    expect(modelsIn(await waitFor(`http://${spark1.ip}:${PORT.sglang}/v1/models`))[0]?.id).toBe("Qwen/Qwen3-8B");
    await waitFor(`http://${spark2.ip}:${PORT.sglang}/health`);
    expect((await get(`http://${spark2.ip}:${PORT.sglang}/v1/models`))?.status).toBe(404);
    expect(fs.readFileSync(path.join(spark1.home, "sgl.log"), "utf8")).toContain(
      "The server is fired up and ready to roll!",
    );
  });

  it("leaves no process behind after stop()", async () => {
    expect(siteLeftovers().length).toBeGreaterThan(0);
    await site.stop();
    expect(siteLeftovers()).toEqual([]);
    await site.stop();
  });
});
