/**
 * Every test file that starts a simulated site gives it a first address of its own: the site's
 * registry listens on port 80 of that address, so two files with the same one collide when the
 * suite runs them side by side.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "./helpers/project";

function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) => {
    const p = join(dir, d.name);
    if (d.isDirectory()) return d.name === "golden" || d.name === "fixtures" ? [] : testFiles(p);
    return d.name.endsWith(".test.ts") ? [p] : [];
  });
}

describe("the test sites' addresses", () => {
  it("no two test files start a site at the same first address", () => {
    const byIp = new Map<number, string[]>();
    for (const f of testFiles(join(REPO, "test"))) {
      for (const m of readFileSync(f, "utf8").matchAll(/\bfirstIp: (\d+)|teamProject\("[^"]*", (\d+)/g)) {
        const ip = Number(m[1] ?? m[2]);
        byIp.set(ip, [...new Set([...(byIp.get(ip) ?? []), relative(REPO, f)])]);
      }
    }
    expect(byIp.size).toBeGreaterThan(20);
    expect([...byIp].filter(([, files]) => files.length > 1)).toEqual([]);
  });
});
