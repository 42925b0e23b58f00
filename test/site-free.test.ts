/**
 * The simulated node's `free` (test/site/shims/free) against procps-ng's own on this machine:
 * the same layout and the same refusals, with MemTotal from the node's etc/memory.json.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const SHIM = path.join(__dirname, "site", "shims", "free");
const root = fs.mkdtempSync(path.join(os.tmpdir(), "sm121-free-"));
fs.mkdirSync(path.join(root, "etc"));
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

function run(cmd: string, args: string[], memory?: string): { code: number | null; out: string; err: string } {
  const file = path.join(root, "etc", "memory.json");
  if (memory === undefined) fs.rmSync(file, { force: true });
  else fs.writeFileSync(file, memory);
  const r = spawnSync(cmd, args, { encoding: "utf8", env: { ...process.env, SIM_NODE_ROOT: root } });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const memTotalKiB = Number(/^MemTotal:\s+(\d+)/m.exec(fs.readFileSync("/proc/meminfo", "utf8"))?.[1]);
/** Label and width of every field: the values themselves move between two calls. */
const shape = (out: string) => out.split("\n").map((l) => l.replace(/\d/g, "9"));

describe("the simulated node's free", () => {
  it.each([["-b"], ["-k"], ["-m"], ["--gibi"], []])(
    "prints procps-ng's layout for free %s, total from memory.json",
    (...args: string[]) => {
      const real = run("free", args);
      const shim = run(SHIM, args, JSON.stringify({ memTotalKiB }));
      expect(shim.code).toBe(0);
      expect(shape(shim.out)).toEqual(shape(real.out));
      const total = (out: string) => out.split("\n")[1]?.trim().split(/\s+/)[1];
      expect(total(shim.out)).toBe(total(real.out));
      expect(shim.out.split("\n")[2]).toBe(real.out.split("\n")[2]);
    },
  );

  it("is a GB10 without memory.json, and caps what it takes from this machine at that total", () => {
    const cols = run(SHIM, ["-k"]).out.split("\n")[1]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    expect(cols[0]).toBe(127601452);
    for (const c of cols) expect(c).toBeLessThanOrEqual(127601452);
    expect((cols[1] ?? 0) + (cols[5] ?? 0)).toBe(127601452);
    const small =
      run(SHIM, ["-k"], '{ "memTotalKiB" : 1024 }').out.split("\n")[1]?.trim().split(/\s+/).slice(1).map(Number) ?? [];
    expect(small[0]).toBe(1024);
    expect(Math.max(...small)).toBe(1024);
  });

  it.each([["-x"], ["--wat"]])("refuses %s with procps-ng's first line and exit 1", (opt) => {
    const real = run("free", [opt]);
    const shim = run(SHIM, [opt]);
    expect(shim.code).toBe(1);
    expect(real.code).toBe(1);
    expect(shim.err.split("\n")[0]).toBe(real.err.split("\n")[0]);
  });

  it("names the file and the key of a memory.json it cannot use", () => {
    const file = path.join(root, "etc", "memory.json");
    expect(run(SHIM, ["-b"], '{"memTotalKiB": 1, "memFreeKiB": 2}').err).toBe(
      `free (test site): ${file}: unknown key "memFreeKiB" (known: memTotalKiB)\n`,
    );
    expect(run(SHIM, ["-b"], '{"memTotalKiB": 1.5}').err).toBe(
      `free (test site): ${file}: memTotalKiB must be a positive whole number of KiB\n`,
    );
    expect(run(SHIM, ["-b"], '{"memTotalKiB": 0}').code).toBe(1);
  });
});
