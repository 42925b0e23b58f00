/** The recipes and stack configs of the benchmark projects. */

/** docker vLLM on one node (as test/e2e/docker-vllm.test.ts). `rev` changes the bundle identity. */
export function soloRecipe(rev = 1): string {
  return `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "16384"]
[env]
BENCH_REV = "${rev}"
[readiness]
timeout_s = 120
max_model_len = 16384
`;
}

/** docker vLLM, tensor parallel over four nodes (rank 0 serves, ranks 1-3 headless). */
export function tp4Recipe(rev = 1): string {
  return `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-235B-A22B"
served_model_name = "qwen3-235b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
tp = 4
port = 8000
args = ["--max-model-len", "32768"]
[env]
BENCH_REV = "${rev}"
[readiness]
timeout_s = 120
max_model_len = 32768
`;
}

export const BENCH_RECIPES = (rev = 1): Record<string, string> => ({
  "bench-solo.toml": soloRecipe(rev),
  "bench-tp4.toml": tp4Recipe(rev),
});

export interface DeploymentLine {
  name?: string;
  recipe: string;
  nodes: string[];
}

export function deploymentsYaml(ds: readonly DeploymentLine[], gatewayNode?: string): string {
  const lines: string[] = [];
  if (gatewayNode !== undefined)
    lines.push(`  sm121:gateway: { path: ~/litellm/models.yaml, format: litellm, node: ${gatewayNode} }`);
  lines.push("  sm121:deployments:");
  for (const d of ds)
    lines.push(
      `    - { ${d.name === undefined ? "" : `name: ${d.name}, `}recipe: ${d.recipe}, nodes: [${d.nodes.join(", ")}] }`,
    );
  return lines.join("\n");
}
