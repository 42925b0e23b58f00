// The real vLLM of the simulated site (README.md here, "The real vLLM"): PyPI's CPU build in the
// virtualenv scripts/vllm.sh installs, serving the tiny model scripts/tiny-model.py makes. A site
// started with `realVllm` gives each node what a Spark with vLLM installed has: the model in its HF
// cache, `vllm` on its PATH (the real one, for the tmux and native targets), and, for the image
// REAL_VLLM_IMAGE, what the image stand-in and the NVIDIA hook stand-in need to run the real
// engine in a container (etc/vllm-cpu.env).
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { placeCheckpoint } from "./hfcache";

/** The real engine's version (toolchain/vllm/requirements.lock): sm121 has its option and metric tables. */
export const REAL_VLLM_VERSION = "0.32.0";
/** The site image whose `vllm` is the real engine; its tag names the version. */
export const REAL_VLLM_IMAGE = `vllm/vllm-openai:v${REAL_VLLM_VERSION}`;
/** The tiny model's repository id in the nodes' HF caches (scripts/tiny-model.py). */
export const TINY_MODEL = "sm121-test/tiny-llama";

export interface RealVllm {
  /** The virtualenv (its real path). */
  venv: string;
  /** The prefix of the Python the virtualenv was made from (pyvenv.cfg's `home`, one up). */
  python: string;
  /** The tiny model's directory. */
  model: string;
}

/** Where scripts/vllm.sh installed the real vLLM and the tiny model; an error says how to install them. */
export function realVllm(): RealVllm {
  const cache = path.join(os.homedir(), ".cache", "sm121");
  const venv = path.join(cache, "vllm");
  const model = path.join(cache, "tiny-llama");
  if (!fs.existsSync(path.join(venv, ".complete")) || !fs.existsSync(path.join(model, ".complete")))
    throw new Error(
      `test site: the real vLLM is not installed (${venv}, ${model}); run bash scripts/setup.sh (scripts/vllm.sh)`,
    );
  const real = fs.realpathSync(venv);
  const home = /^home\s*=\s*(.+)$/m.exec(fs.readFileSync(path.join(real, "pyvenv.cfg"), "utf8"))?.[1]?.trim();
  if (home === undefined) throw new Error(`test site: ${real}/pyvenv.cfg names no home`);
  return { venv: real, python: fs.realpathSync(path.dirname(home)), model: fs.realpathSync(model) };
}

/**
 * The node's etc/vllm-cpu.env: the virtualenv, the host directories a container of the real
 * engine gets read-only at the same paths (the virtualenv, its Python, the machine's shared
 * libraries), and the CPU knobs a Spark's GPU makes needless: the core the node's engine runs its
 * threads on (each node its own, as each Spark has its own GPU) and the KV cache size (a GPU's
 * comes from --gpu-memory-utilization; vLLM's CPU build without it asks for most of the RAM); and
 * torch.compile off, for the compiler the image stand-in lacks.
 */
function vllmCpuEnv(r: RealVllm, index: number): string {
  const libs = fs.realpathSync("/lib/x86_64-linux-gnu");
  return [
    '# The simulated GPU of this node for the real vLLM (test/site/README.md, "The real vLLM").',
    `VLLM_CPU_VENV=${r.venv}`,
    `VLLM_CPU_MOUNTS=${[r.venv, r.python, libs].join(":")}`,
    `VLLM_CPU_OMP_THREADS_BIND=${index % os.cpus().length}`,
    "VLLM_CPU_KVCACHE_SPACE=1",
    // The image stand-in has no C++ compiler (a vLLM image has one): torch.compile, which vLLM
    // uses even with --enforce-eager (tensor parallel's embedding mask), runs eagerly instead.
    "TORCHDYNAMO_DISABLE=1",
    "",
  ].join("\n");
}

/** Gives the node the real vLLM: etc/vllm-cpu.env, and the tiny model in its HF cache (`hfHome`). */
export function provideRealVllm(r: RealVllm, root: string, hfHome: string, index: number): void {
  fs.writeFileSync(path.join(root, "etc", "vllm-cpu.env"), vllmCpuEnv(r, index));
  const files: Record<string, Buffer> = {};
  for (const f of fs.readdirSync(r.model).sort()) {
    if (f.startsWith(".") || f === "sm121-tiny-model.json") continue;
    files[f] = fs.readFileSync(path.join(r.model, f));
  }
  placeCheckpoint(hfHome, TINY_MODEL, files);
}
