/**
 * The engine drivers of seed 000: each engine's argument vector per rank and the driver
 * properties that the targets and renders rely on.
 */
import { describe, expect, it } from "vitest";
import { DRIVERS, driverFor, engineArgv, type EngineFlagsCtx } from "../src/engines";
import { rendezvousPort } from "../src/engines/driver";
import { parseRecipe } from "../src/recipe/recipe";
import { ENGINE_NAMES, type EngineName, type Recipe } from "../src/recipe/types";

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

const VLLM = recipe('model = "Qwen/Qwen3-32B"\nimage = "nvcr.io/nvidia/vllm:25.10-py3"\nport = 8000\ntp = 2\nargs = ["--max-model-len", "32768"]\n');
const SGLANG = recipe('engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-30B-A3B"\nport = 30000\ntp = 2\nargs = ["--context-length", "65536"]\n');
const GR8 = recipe('engine = "gr8"\nmodel = "zai-org/GLM-5.3-FP8"\nimage = "ghcr.io/kindlingai/gr8:0.9.2"\ntp = 4\nargs = ["--shape", "full"]\n');
const DGPP = recipe('engine = "dgpp"\ndeploy = "native"\nmodel = "Qwen/Qwen3.8-27B"\n[dgpp]\nhttp_port = 18181\n');

describe("the registry", () => {
  it("has exactly the four engines, each under its own name", () => {
    expect(Object.keys(DRIVERS).sort()).toEqual(["dgpp", "gr8", "sglang", "vllm"]);
    expect([...ENGINE_NAMES].sort()).toEqual(Object.keys(DRIVERS).sort());
    for (const [name, d] of Object.entries(DRIVERS)) expect(d.name).toBe(name);
  });

  it.each(ENGINE_NAMES)("driverFor(%s) is the registered driver", (e: EngineName) => {
    expect(driverFor(e)).toBe(DRIVERS[e]);
  });

  it("puts the rendezvous port 1000 above the API port", () => {
    expect([rendezvousPort(8000), rendezvousPort(30000)]).toEqual([9000, 31000]);
  });
});

describe("driver properties", () => {
  type Row = [EngineName, string, boolean, string | undefined, boolean, boolean, string[]];
  const rows: Row[] = [
    ["vllm", "per-node", true, "VLLM_HOST_IP", true, false, ["vllm", "serve"]],
    ["sglang", "per-node", false, "SGLANG_WORKER_IP", true, true, ["python3", "-m", "sglang.launch_server"]],
    ["gr8", "per-node", false, undefined, false, false, ["/opt/gr8/gr8", "glm53", "up"]],
    ["dgpp", "head-coordinated", false, undefined, false, false, ["scripts/dgpp-cluster", "up"]],
  ];
  it.each(rows)("%s: shape %s, headless %s, ip env %s, host/port %s (all ranks %s), entrypoint %j", (e, shape, headless, ipEnv, hostPort, allRanks, entry) => {
    const d = driverFor(e);
    expect([d.shape, d.headlessWorkers, d.engineIpEnv, d.takesHostPort, d.hostPortOnAllNodes, d.entrypointDefault()]).toEqual([shape, headless, ipEnv, hostPort, allRanks, entry]);
  });

  it("serves the API on the recipe port (vLLM, SGLang), :8100 (gr8) and [dgpp].http_port (DGPP)", () => {
    expect([DRIVERS.vllm.apiPort(VLLM), DRIVERS.sglang.apiPort(SGLANG), DRIVERS.gr8.apiPort(GR8), DRIVERS.dgpp.apiPort(DGPP)]).toEqual([8000, 30000, 8100, 18181]);
  });

  it("defaults DGPP's API to 18080", () => {
    expect(DRIVERS.dgpp.apiPort(recipe('engine = "dgpp"\ndeploy = "native"\n[dgpp]\n'))).toBe(18080);
  });

  it("gives an install hint per engine", () => {
    expect(DRIVERS.vllm.installHint).toContain("pip install vllm");
    expect(DRIVERS.sglang.installHint).toContain("sglang");
    expect(DRIVERS.gr8.installHint).toContain("ghcr.io/kindlingai/gr8");
    expect(DRIVERS.dgpp.installHint).toContain("[dgpp].repo and rev");
  });

  it("knows the KV cache line of vLLM and SGLang logs", () => {
    expect(new RegExp(DRIVERS.vllm.kvCachePattern ?? "^$").exec("GPU KV cache size: 1,048,576 tokens")?.[1]).toBe("1,048,576");
    expect(new RegExp(DRIVERS.sglang.kvCachePattern ?? "^$").exec("KV Cache is allocated. #tokens: 524288")?.[1]).toBe("524288");
  });
});

describe("vLLM", () => {
  it("single node: `vllm serve MODEL` with the tp, host and port, then the recipe args", () => {
    const one = recipe('model = "Qwen/Qwen3-8B"\nimage = "i/v:1"\nport = 8001\n');
    expect(argv(one, 0, 1)).toEqual(["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "1", "--host", "203.0.113.1", "--port", "8001"]);
  });

  it("takes --model after the api_server module entrypoint", () => {
    const r = recipe('model = "Qwen/Qwen3-8B"\nimage = "i/v:1"\nport = 8000\nentrypoint = ["python3", "-m", "vllm.entrypoints.openai.api_server"]\n');
    expect(argv(r, 0, 1)).toEqual(["python3", "-m", "vllm.entrypoints.openai.api_server", "--model", "Qwen/Qwen3-8B", "--tensor-parallel-size", "1", "--host", "203.0.113.1", "--port", "8000"]);
  });

  it("passes the served name before the tp", () => {
    const r = recipe('model = "Qwen/Qwen3-8B"\nserved_model_name = "qwen3-8b"\nimage = "i/v:1"\nport = 8000\n');
    expect(argv(r, 0, 1).slice(2, 7)).toEqual(["Qwen/Qwen3-8B", "--served-model-name", "qwen3-8b", "--tensor-parallel-size", "1"]);
  });

  it("rank 0 of 2 serves the API and is the rendezvous head", () => {
    expect(argv(VLLM, 0, 2)).toEqual([
      "vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2", "--host", "203.0.113.1", "--port", "8000",
      "--nnodes", "2", "--node-rank", "0", "--master-addr", "203.0.113.1", "--master-port", "9000", "--max-model-len", "32768",
    ]);
  });

  it("rank 1 of 2 runs headless, without --host and --port", () => {
    expect(argv(VLLM, 1, 2)).toEqual([
      "vllm", "serve", "Qwen/Qwen3-32B", "--tensor-parallel-size", "2",
      "--nnodes", "2", "--node-rank", "1", "--master-addr", "203.0.113.1", "--master-port", "9000", "--headless", "--max-model-len", "32768",
    ]);
  });

  it.each([0, 1, 2, 3])("rank %i of 4: --headless exactly when rank > 0, --host/--port exactly on rank 0", (rank) => {
    const a = argv(VLLM, rank, 4);
    expect(a.includes("--headless")).toBe(rank > 0);
    expect([a.includes("--host"), a.includes("--port")]).toEqual([rank === 0, rank === 0]);
    expect(a.slice(a.indexOf("--nnodes"), a.indexOf("--master-port") + 2)).toEqual(["--nnodes", "4", "--node-rank", String(rank), "--master-addr", "203.0.113.1", "--master-port", "9000"]);
  });
});

describe("SGLang", () => {
  it("single node: --model-path and --tp, no rendezvous flags", () => {
    const one = recipe('engine = "sglang"\ndeploy = "tmux"\nmodel = "Qwen/Qwen3-8B"\nport = 30000\n');
    expect(argv(one, 0, 1)).toEqual(["python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B", "--tp", "1", "--host", "203.0.113.1", "--port", "30000"]);
  });

  it.each([0, 1])("rank %i of 2: host and port on every rank, --dist-init-addr head:port+1000", (rank) => {
    expect(argv(SGLANG, rank, 2)).toEqual([
      "python3", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-30B-A3B", "--tp", "2", "--host", IPS[rank], "--port", "30000",
      "--nnodes", "2", "--node-rank", String(rank), "--dist-init-addr", "203.0.113.1:31000", "--context-length", "65536",
    ]);
  });

  it("never runs headless", () => {
    expect(argv(SGLANG, 1, 2)).not.toContain("--headless");
  });
});

describe("gr8", () => {
  const expected = ["/opt/gr8/gr8", "glm53", "up", "--model", "zai-org/GLM-5.3-FP8", "--tp", "4", "--peers", "203.0.113.1,203.0.113.2,203.0.113.3,203.0.113.4", "--shape", "full"];

  it.each([0, 1, 2, 3])("rank %i of 4 runs `gr8 glm53 up --model M --tp 4 --peers ip0,...`", (rank) => {
    expect(argv(GR8, rank, 4)).toEqual(expected);
  });

  it.each([0, 1, 2, 3])("rank %i of 4 has no --host, --port, --headless or vLLM/SGLang rendezvous flag", (rank) => {
    const a = argv(GR8, rank, 4);
    for (const f of ["--host", "--port", "--headless", "--nnodes", "--node-rank", "--master-addr", "--dist-init-addr", "--tensor-parallel-size"]) expect(a).not.toContain(f);
  });

  it("lists the peers in rank order", () => {
    const r = { ...GR8, tp: 2 };
    const c: EngineFlagsCtx = { recipe: r, rank: 1, nnodes: 2, peers: ["198.51.100.9", "198.51.100.3"], bindHost: "198.51.100.3", port: 8100 };
    expect(engineArgv(DRIVERS.gr8, c)).toEqual(["/opt/gr8/gr8", "glm53", "up", "--model", "zai-org/GLM-5.3-FP8", "--tp", "2", "--peers", "198.51.100.9,198.51.100.3", "--shape", "full"]);
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
