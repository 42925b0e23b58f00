/**
 * The engine drivers of seed 000: each engine's argument vector per rank and the driver
 * properties that the targets and renders rely on.
 */
import { describe, expect, it } from "vitest";
import { said } from "./helpers/said";
import { DRIVERS, driverFor, engineArgv, type EngineFlagsCtx } from "../src/engines";
import { rendezvousPort } from "../src/engines/driver";
import { parseRecipe } from "../src/engines/recipes";
import { ENGINE_NAMES, type Recipe } from "../src/recipe/types";

const IPS = ["203.0.113.1", "203.0.113.2", "203.0.113.3", "203.0.113.4"];

function recipe(text: string): Recipe {
  return parseRecipe("recipes/t.toml", text);
}

/** Rank `rank` of a deployment over the first `n` addresses; the node binds its own ip. */
function ctx(r: Recipe, rank: number, n: number, port = r.port ?? driverFor(r.engine).apiPort(r)): EngineFlagsCtx {
  const peers = IPS.slice(0, n);
  return { recipe: r, rank, nnodes: n, peers, bindHost: peers[rank] ?? "127.0.0.1", port };
}

const argv = (r: Recipe, rank: number, n: number): string[] => engineArgv(driverFor(r.engine), ctx(r, rank, n));

const VLLM = recipe(
  'model = "Qwen/Qwen3-32B"\nimage = "nvcr.io/nvidia/vllm:26.01-py3"\nport = 8000\ntp = 2\n' +
    'args = ["--max-model-len", "32768"]\n',
);
const SGLANG = recipe(
  'engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-30B-A3B"\nport = 30000\ntp = 2\n' +
    'args = ["--context-length", "65536"]\n',
);
const GR8 = recipe(
  'engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\ntp = 4\n' +
    'args = ["--shape", "full"]\n',
);
const DGPP = recipe('engine = "dgpp"\ndeploy = "native"\nmodel = "Qwen/Qwen3.8-27B"\n[dgpp]\nhttp_port = 18181\n');

describe("the registry", () => {
  it("has exactly the four engines, each under its own name", () => {
    expect([...ENGINE_NAMES].sort()).toEqual(Object.keys(DRIVERS).sort());
    for (const [name, d] of Object.entries(DRIVERS)) expect(d.name).toBe(name);
  });

  it("puts the rendezvous port 1000 above the API port", () => {
    expect([rendezvousPort(8000), rendezvousPort(30000)]).toEqual([9000, 31000]);
  });
});

describe("where the API answers, and what the logs say", () => {
  it("serves the API on the recipe port (vLLM, SGLang), :8100 (gr8), [dgpp].http_port (DGPP, default 18080)", () => {
    expect([
      DRIVERS.vllm.apiPort(VLLM),
      DRIVERS.sglang.apiPort(SGLANG),
      DRIVERS.gr8.apiPort(GR8),
      DRIVERS.dgpp.apiPort(DGPP),
    ]).toEqual([8000, 30000, 8100, 18181]);
    expect(DRIVERS.dgpp.apiPort(recipe('engine = "dgpp"\ndeploy = "native"\n[dgpp]\n'))).toBe(18080);
  });

  it("finds the KV cache size in vLLM's and SGLang's logs", () => {
    const vllm = (line: string) => new RegExp(DRIVERS.vllm.kvCachePattern ?? "^$").exec(line)?.[1];
    expect(vllm("GPU KV cache size: 1,048,576 tokens")).toBe("1,048,576");
    // vLLM's CPU build (the test site's real engine) names its device: the line sm121 verifies there.
    const cpu =
      "(EngineCore pid=29) INFO 12-06 01:51:10 [kv_cache_utils.py:2327] CPU KV cache size: 1,048,576 tokens, " +
      "Maximum concurrency for 512 tokens per request: 2048.00x";
    expect(vllm(cpu)).toBe("1,048,576");
    expect(new RegExp(DRIVERS.sglang.kvCachePattern ?? "^$").exec("KV Cache is allocated. #tokens: 524288")?.[1]).toBe(
      "524288",
    );
  });
});

describe("what each engine reads from the environment", () => {
  it("vLLM: its address in VLLM_HOST_IP", () => {
    expect(DRIVERS.vllm.engineEnv(VLLM, "203.0.113.2")).toEqual({ VLLM_HOST_IP: "203.0.113.2" });
  });

  it("SGLang: its address in SGLANG_HOST_IP (what SGLang reads), and SGLANG_WORKER_IP as seed 000 set it", () => {
    expect(DRIVERS.sglang.engineEnv(SGLANG, "203.0.113.2")).toEqual({
      SGLANG_HOST_IP: "203.0.113.2",
      SGLANG_WORKER_IP: "203.0.113.2",
    });
  });

  it("a recipe that names a node's interface or RDMA port is refused, the site's fabric as the fix", () => {
    const r = 'model = "M/m"\nimage = "i/v:1"\nport = 8000\n[env]\nNCCL_SOCKET_IFNAME = "enp1s0f0np0"\n';
    expect(() => recipe(r)).toThrow(
      "recipes/t.toml:5:1: env.NCCL_SOCKET_IFNAME: NCCL_SOCKET_IFNAME names a node's interface or RDMA port, " +
        "which differs from node to node: a recipe runs on any node; remove NCCL_SOCKET_IFNAME from [env] and give " +
        "each node its fabric in the site: sm121:nodes.<node>.fabric: { interface: <its ConnectX-7 interface>, " +
        "rdma: auto } (sm121 init writes it; docs/fabric.md), from which sm121 sets NCCL_SOCKET_IFNAME on each node " +
        "as that node names it",
    );
    for (const k of ["GLOO_SOCKET_IFNAME", "UCX_NET_DEVICES", "NCCL_IB_HCA", "TP_SOCKET_IFNAME"])
      expect(() => recipe(`model = "M/m"\nimage = "i/v:1"\nport = 8000\n[env]\n${k} = "x"\n`)).toThrow(
        `env.${k}: ${k} names a node's interface`,
      );
  });

  it("gr8 and DGPP get nothing (their launchers set up their own transport)", () => {
    expect([DRIVERS.gr8.engineEnv(GR8, "203.0.113.2"), DRIVERS.dgpp.engineEnv(DGPP, "203.0.113.2")]).toEqual([{}, {}]);
  });
});

describe("launch rules of the engines", () => {
  const OLD = recipe(
    'model = "Q/q"\nimage = "i/v:1"\nport = 8000\n' +
      'entrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n',
  );
  const on = (nodes: number, gpusPerNode = 1) => ({ nodes, gpusPerNode });
  it("vLLM's old api_server module serves one node, and is refused for worker ranks (it ignores --headless)", () => {
    expect(DRIVERS.vllm.launchProblem(OLD, on(1))).toBeUndefined();
    const p = DRIVERS.vllm.launchProblem(OLD, on(2));
    expect(said(p?.problem)).toContain("ignores --headless");
    expect(said(p?.fix)).toContain('entrypoint = ["vllm", "serve"]');
    expect(p?.field).toEqual(["entrypoint"]);
  });

  it("tp x pp must be the deployment's GPUs, one GB10 per Spark (vLLM, SGLang); gr8 runs one rank per peer", () => {
    expect(DRIVERS.vllm.launchProblem(VLLM, on(2))).toBeUndefined();
    const one = DRIVERS.vllm.launchProblem(VLLM, on(1));
    expect(said(one?.problem)).toBe(
      "tp = 2 starts 2 ranks, one per GPU, but the deployment has 1 GPU (1 node x 1 GPU; " +
        "a DGX Spark has one GB10 unless the node sets gpus): the engine would stop at start with " +
        '"World size (2) is larger than the number of available GPUs"',
    );
    expect(said(one?.fix)).toBe("set tp = 1 in recipes/t.toml, or list 2 nodes in the deployment");
    expect(one?.field).toEqual(["tp"]);
    expect(DRIVERS.vllm.launchProblem(VLLM, on(1, 2))).toBeUndefined();
    expect(said(DRIVERS.vllm.launchProblem({ ...VLLM, tp: 1 }, on(2))?.fix)).toBe(
      "set tp = 2 in recipes/t.toml, or list 1 node in the deployment",
    );
    const pp = recipe('model = "Q/q"\nimage = "i/v:1"\nport = 8000\ntp = 2\nargs = ["-pp", "2"]\n');
    expect(DRIVERS.vllm.launchProblem(pp, on(4))).toBeUndefined();
    expect(said(DRIVERS.vllm.launchProblem(pp, on(2))?.problem)).toMatch(/^tp = 2 x pp 2 starts 4 ranks/);
    expect(DRIVERS.sglang.launchProblem(SGLANG, on(2))).toBeUndefined();
    expect(said(DRIVERS.sglang.launchProblem(SGLANG, on(4))?.fix)).toBe(
      "set tp = 4 in recipes/t.toml, or list 2 nodes in the deployment",
    );
    expect(said(DRIVERS.gr8.launchProblem(GR8, on(2))?.fix)).toBe("list 4 nodes or set tp = 2");
    expect(DRIVERS.dgpp.launchProblem(DGPP, on(3))).toBeUndefined();
  });
});

describe("vLLM", () => {
  it("single node: `vllm serve MODEL` with the tp, host and port, then the recipe args", () => {
    const one = recipe('model = "Qwen/Qwen3-8B"\nimage = "i/v:1"\nport = 8001\n');
    expect(argv(one, 0, 1)).toEqual([
      "vllm",
      "serve",
      "Qwen/Qwen3-8B",
      "--tensor-parallel-size",
      "1",
      "--host",
      "203.0.113.1",
      "--port",
      "8001",
    ]);
  });

  it("takes --model after the api_server module entrypoint", () => {
    const r = recipe(
      'model = "Qwen/Qwen3-8B"\nimage = "i/v:1"\nport = 8000\n' +
        'entrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n',
    );
    expect(argv(r, 0, 1)).toEqual([
      "python3",
      "-m",
      "vllm.entrypoints.openai.api_server",
      "--model",
      "Qwen/Qwen3-8B",
      "--tensor-parallel-size",
      "1",
      "--host",
      "203.0.113.1",
      "--port",
      "8000",
    ]);
  });

  it("passes the served name before the tp", () => {
    const r = recipe('model = "Qwen/Qwen3-8B"\nserved_model_name = "qwen3-8b"\nimage = "i/v:1"\nport = 8000\n');
    expect(argv(r, 0, 1).slice(2, 7)).toEqual([
      "Qwen/Qwen3-8B",
      "--served-model-name",
      "qwen3-8b",
      "--tensor-parallel-size",
      "1",
    ]);
  });

  it("rank 0 of 2 serves the API and is the rendezvous head", () => {
    expect(argv(VLLM, 0, 2)).toEqual([
      "vllm",
      "serve",
      "Qwen/Qwen3-32B",
      "--tensor-parallel-size",
      "2",
      "--host",
      "203.0.113.1",
      "--port",
      "8000",
      "--nnodes",
      "2",
      "--node-rank",
      "0",
      "--master-addr",
      "203.0.113.1",
      "--master-port",
      "9000",
      "--max-model-len",
      "32768",
    ]);
  });

  it("rank 1 of 2 runs headless, without --host and --port", () => {
    expect(argv(VLLM, 1, 2)).toEqual([
      "vllm",
      "serve",
      "Qwen/Qwen3-32B",
      "--tensor-parallel-size",
      "2",
      "--nnodes",
      "2",
      "--node-rank",
      "1",
      "--master-addr",
      "203.0.113.1",
      "--master-port",
      "9000",
      "--headless",
      "--max-model-len",
      "32768",
    ]);
  });

  it.each([0, 1, 2, 3])("rank %i of 4: --headless exactly when rank > 0, --host/--port exactly on rank 0", (rank) => {
    const a = argv(VLLM, rank, 4);
    expect(a.includes("--headless")).toBe(rank > 0);
    expect([a.includes("--host"), a.includes("--port")]).toEqual([rank === 0, rank === 0]);
    expect(a.slice(a.indexOf("--nnodes"), a.indexOf("--master-port") + 2)).toEqual([
      "--nnodes",
      "4",
      "--node-rank",
      String(rank),
      "--master-addr",
      "203.0.113.1",
      "--master-port",
      "9000",
    ]);
  });
});

describe("SGLang", () => {
  it("one node: --model-path and --tp-size (the option's own name, not an abbreviation), no rendezvous flags", () => {
    const one = recipe('engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 30000\n');
    expect(argv(one, 0, 1)).toEqual([
      "python3",
      "-m",
      "sglang.launch_server",
      "--model-path",
      "Qwen/Qwen3-8B",
      "--tp-size",
      "1",
      "--host",
      "203.0.113.1",
      "--port",
      "30000",
      "--enable-metrics",
    ]);
  });

  it.each([0, 1])("rank %i of 2: host and port on every rank, --dist-init-addr head:port+1000", (rank) => {
    expect(argv(SGLANG, rank, 2)).toEqual([
      "python3",
      "-m",
      "sglang.launch_server",
      "--model-path",
      "Qwen/Qwen3-30B-A3B",
      "--tp-size",
      "2",
      "--host",
      IPS[rank],
      "--port",
      "30000",
      "--nnodes",
      "2",
      "--node-rank",
      String(rank),
      "--dist-init-addr",
      "203.0.113.1:31000",
      "--enable-metrics",
      "--context-length",
      "65536",
    ]);
  });

  it("never runs headless", () => {
    expect(argv(SGLANG, 1, 2)).not.toContain("--headless");
  });

  it("takes the API key file with --config before the recipe args (flags on the command line win over it)", () => {
    const a = engineArgv(DRIVERS.sglang, { ...ctx(SGLANG, 0, 1), keyFile: "/run/sm121/api-key.yaml" });
    // The metrics exporter's flag sits before them too.
    const tail = ["--config", "/run/sm121/api-key.yaml", "--enable-metrics", "--context-length", "65536"];
    expect(a.slice(-5)).toEqual(tail);
  });
});

describe("gr8", () => {
  const expected = [
    "/opt/gr8/gr8",
    "glm53",
    "up",
    "--model",
    "zai-org/GLM-5.3-FP8",
    "--tp",
    "4",
    "--peers",
    "203.0.113.1,203.0.113.2,203.0.113.3,203.0.113.4",
    "--shape",
    "full",
  ];

  it.each([0, 1, 2, 3])("rank %i of 4 runs `gr8 glm53 up --model M --tp 4 --peers ip0,...`", (rank) => {
    expect(argv(GR8, rank, 4)).toEqual(expected);
  });

  it.each([0, 1, 2, 3])("rank %i of 4 has no --host, --port, --headless or vLLM/SGLang rendezvous flag", (rank) => {
    const a = argv(GR8, rank, 4);
    for (const f of [
      "--host",
      "--port",
      "--headless",
      "--nnodes",
      "--node-rank",
      "--master-addr",
      "--dist-init-addr",
      "--tensor-parallel-size",
    ])
      expect(a).not.toContain(f);
  });

  it("lists the peers in rank order", () => {
    const r = { ...GR8, tp: 2 };
    const c: EngineFlagsCtx = {
      recipe: r,
      rank: 1,
      nnodes: 2,
      peers: ["198.51.100.9", "198.51.100.3"],
      bindHost: "198.51.100.3",
      port: 8100,
    };
    expect(engineArgv(DRIVERS.gr8, c)).toEqual([
      "/opt/gr8/gr8",
      "glm53",
      "up",
      "--model",
      "zai-org/GLM-5.3-FP8",
      "--tp",
      "2",
      "--peers",
      "198.51.100.9,198.51.100.3",
      "--shape",
      "full",
    ]);
  });
});

describe("DGPP", () => {
  it.each([0, 1])("rank %i: no model, tp, host/port or rendezvous args (the cluster JSON carries them)", (rank) => {
    expect(argv(DGPP, rank, 2)).toEqual(["scripts/dgpp-cluster", "up"]);
  });

  it("is head-coordinated with its API on http_port", () => {
    expect([DRIVERS.dgpp.shape, DRIVERS.dgpp.apiPort(DGPP)]).toEqual(["head-coordinated", 18181]);
  });
});
