/** The messages of what `fn` throws: one SpecError, or every error of a SpecErrors. */
import { SpecError, SpecErrors } from "../../src/recipe/errors";

export function errorsOf(fn: () => unknown): string[] {
  try {
    fn();
  } catch (e) {
    if (e instanceof SpecErrors) return e.errors.map((x) => x.message);
    if (e instanceof SpecError) return [e.message];
    throw e;
  }
  throw new Error("expected a SpecError, but nothing was thrown");
}

/** A site of one ssh node on five lines, ending in a newline: a test appends from line 6. */
export const ONE_NODE = [
  "config:",
  "  sm121:nodes:",
  "    spark1:",
  "      ssh: { host: 203.0.113.1, user: ops }",
  "      ip: 203.0.113.1",
  "",
].join("\n");

/** A small vLLM recipe in Docker (Qwen3-8B, `maxLen` tokens of context), ready within `timeoutS`. */
export function smallVllm(timeoutS: number, maxLen = 8192): string {
  return `engine = "vllm"
deploy = "docker"
model = "Qwen/Qwen3-8B"
served_model_name = "qwen3-8b"
image = "nvcr.io/nvidia/vllm:26.01-py3"
port = 8000
args = ["--max-model-len", "${maxLen}"]
[readiness]
timeout_s = ${timeoutS}
`;
}
