// The node-side directory of the spec-001 script recipe (qwen38-flash): start.sh,
// stop.sh, .env.sample and the files they mount, copied from
// test/site/recipe/qwen38-flash/. The keys start.sh reads are documented at its top.
import * as fs from "node:fs";
import * as path from "node:path";
import { siteSourceDir } from "./paths";
import type { SimNode } from "./site";

/**
 * Writes the qwen38-flash recipe into `dir` on `node` (absolute, or relative to
 * the node's home). Returns the absolute directory.
 */
export function makeScriptRecipe(node: SimNode, dir: string): string {
  const target = path.isAbsolute(dir) ? dir : path.join(node.home, dir);
  fs.mkdirSync(target, { recursive: true });
  fs.cpSync(path.join(siteSourceDir(), "recipe", "qwen38-flash"), target, { recursive: true });
  fs.chmodSync(path.join(target, "start.sh"), 0o755);
  fs.chmodSync(path.join(target, "stop.sh"), 0o755);
  fs.mkdirSync(path.join(target, "logs"), { recursive: true });
  return target;
}
