// The node-side directory of the spec-001 script recipe (qwen38-flash): start.sh,
// stop.sh, .env.sample and the files they mount, copied from
// test/site/recipe/qwen38-flash/. The keys start.sh reads are documented at its top.
import * as fs from "node:fs";
import * as path from "node:path";
import { siteSourceDir } from "./paths";
import type { SimNode } from "./site";
import { placeCheckpoint } from "./hfcache";

/** The model the recipe's profiles serve (MODEL): in the node's HF cache, as on a Spark that runs it. */
export const SCRIPT_MODEL = "Qwen/Qwen3.8-Flash-Next";

/**
 * Writes the qwen38-flash recipe into `dir` on `node` (absolute, or relative to
 * the node's home), and its model into the node's HF cache (seed 001's preflight
 * refuses an up without it). Returns the absolute directory.
 */
export function makeScriptRecipe(node: SimNode, dir: string): string {
  const target = path.isAbsolute(dir) ? dir : path.join(node.home, dir);
  fs.mkdirSync(target, { recursive: true });
  fs.cpSync(path.join(siteSourceDir(), "recipe", "qwen38-flash"), target, { recursive: true });
  fs.chmodSync(path.join(target, "start.sh"), 0o755);
  fs.chmodSync(path.join(target, "stop.sh"), 0o755);
  fs.mkdirSync(path.join(target, "logs"), { recursive: true });
  placeCheckpoint(path.join(node.home, ".cache", "huggingface"), SCRIPT_MODEL);
  return target;
}
