/**
 * The README's main job, `npm run demo` (scripts/demo.sh: the set-up, then this same compiled
 * demo): three simulated Sparks, an up that serves both deployments, a chat answer from each
 * endpoint the stack's outputs name, a second up that changes nothing, a destroy. Its output is no
 * terminal: the titles come without bold. The demo binds
 * the addresses reserved for it (test/site/alloc.ts), none of a test file's.
 */
import { spawn } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/project";

function demo(): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [join(REPO, "dist", "demo", "demo.js")], { cwd: REPO });
    let out = "";
    child.stdout.on("data", (d: Buffer) => (out += d.toString()));
    child.stderr.on("data", (d: Buffer) => (out += d.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, out }));
  });
}

describe("npm run demo", () => {
  it("serves both deployments, answers a chat from each endpoint, changes nothing twice, destroys", async () => {
    const { code, out } = await demo();
    expect(code, out).toBe(0);
    const answers = [...out.matchAll(/^== (\S+): (\S+) at (http:\S+)\n\d+ ms: .* serving (\S+) on /gm)];
    expect(
      answers.map((m) => [m[1], m[2] === m[4]]),
      out,
    ).toEqual([
      ["flash", true],
      ["qwen3-32b-vllm-tp2", true],
    ]);
    expect(out).toMatch(/a second pulumi up: nothing changed, nothing is touched\n\s+\d+ unchanged/);
    expect(out).toMatch(/The resources in the stack have been deleted/);
  }, 600_000);
});
