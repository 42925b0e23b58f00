/**
 * Every address and port a test binds comes from test/site/alloc.ts: each test file its own /24
 * and its own ports on 127.0.0.1, so files that vitest runs side by side never collide, and a file
 * gets the same ones at every run. Checked two ways: the allocator's ranges are disjoint for the
 * files there are, and no test file writes an address or a port by hand where a server binds.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { allocate, MAX_FILES, PORT_BASE, PORTS_PER_FILE, recordedSite, SITE_NODES, testFiles } from "./site/alloc";
import { REPO } from "./helpers/project";
import { SITE_TESTS } from "../vitest.unit.config.mjs";

/** The engines' real defaults, written where a test is about them: on a node's own address. */
const ENGINE_DEFAULTS = new Set([8000, 8100, 9000, 18080, 19080, 30000, 31000]);

/**
 * The ways a test wrote an address or a port by hand before the allocator, each with what it
 * bound: a hit is a line number and the text.
 */
const BY_HAND: Array<{ what: string; re: RegExp }> = [
  { what: "a site's first address or sshd port", re: /\b(firstIp|sshPort|pgPort|proxyPort): \d/ },
  { what: "a site helper's address or port arguments", re: /\b(servedSite|teamProject)\("[^"]*", \d/ },
  { what: "a loopback address other than 127.0.0.1", re: /\b127\.\d+\.\d+\.(?!1\b)\d+/ },
  { what: "a port in a node's env (BIND/PORT)", re: /\bPORT: "?(\d+)/ },
  { what: "a rendezvous port", re: /(MASTER_PORT|RDZV_PORT)[:=] ?"?(\d+)/ },
  { what: "a port on 127.0.0.1", re: /127\.0\.0\.1:(\d+)|127\\\\?\.0\\\\?\.0\\\\?\.1:(\d+)/ },
  { what: "an engine's --port", re: /--(?:master-)?port[ =](\d+)/ },
  { what: "a server's listen port", re: /\.listen\(([1-9]\d*)/ },
];

function byHand(text: string): string[] {
  return text.split("\n").flatMap((line, i) =>
    BY_HAND.flatMap(({ what, re }) => {
      const m = re.exec(line);
      if (m === null) return [];
      const port = m.slice(1).find((g) => g !== undefined && /^\d+$/.test(g));
      if (port !== undefined && ENGINE_DEFAULTS.has(Number(port))) return [];
      return [`${i + 1}: ${what}: ${line.trim()}`];
    }),
  );
}

const SELF = "test/site-addresses.test.ts";
const text = (f: string) => readFileSync(join(REPO, f), "utf8");

/**
 * The files that start a site or a server: those of the site lane (SITE_TESTS), those that ask the
 * allocator, and the helpers they start them with.
 */
const CHECKED = [
  ...testFiles(REPO).filter(
    (f) =>
      f !== SELF &&
      (SITE_TESTS.some((p) => (p.endsWith("/**") ? f.startsWith(p.slice(0, -2)) : f === p)) ||
        text(f).includes("allocate(__filename)")),
  ),
  "test/cli-helpers.ts",
  "test/helpers/roll.ts",
  "test/helpers/team.ts",
];

describe("the test addresses' allocator", () => {
  const all = testFiles(REPO).map((f) => allocate(join(REPO, f)));

  it("gives every test file its own /24 and its own ports, the same at every call", () => {
    expect(all.length).toBeGreaterThan(50);
    expect(all.length).toBeLessThanOrEqual(MAX_FILES);
    expect(new Set(all.map((a) => a.net)).size).toBe(all.length);
    expect(all.map((a) => a.slot)).toEqual(all.map((_, i) => i));
    const ports = all.flatMap((a) => Array.from({ length: PORTS_PER_FILE }, (_, i) => a.port(i)));
    expect(new Set(ports).size).toBe(ports.length);
    expect(allocate(__filename)).toMatchObject({ file: SELF });
    expect(JSON.stringify(allocate(__filename))).toBe(JSON.stringify(allocate(__filename)));
    expect(allocate(__filename).port(3)).toBe(allocate(__filename).port(3));
  });

  it("keeps the ports clear of the engines' defaults and of the kernel's ephemeral range", () => {
    const last = PORT_BASE + MAX_FILES * PORTS_PER_FILE - 1;
    for (const p of ENGINE_DEFAULTS) expect(p < PORT_BASE || p > last, String(p)).toBe(true);
    const [low] = readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/).map(Number);
    expect(last).toBeLessThan(low ?? 0);
  });

  it("keeps a file's sites and servers apart inside its /24, and refuses what does not fit", () => {
    const at = allocate(__filename);
    const nodes = (k: number) => Array.from({ length: SITE_NODES }, (_, i) => at.site(k).firstIp + i);
    const used = [...nodes(0), ...nodes(9), ...Array.from({ length: 9 }, (_, i) => Number(at.host(i).split(".")[3]))];
    expect(new Set(used).size).toBe(used.length);
    expect(Math.max(...used)).toBeLessThanOrEqual(254);
    expect(Math.min(...used)).toBeGreaterThanOrEqual(2);
    expect(() => at.site(10)).toThrow("test addresses: site 10 is not in 0-9");
    expect(() => at.port(PORTS_PER_FILE)).toThrow(`port ${PORTS_PER_FILE} is not in 0-${PORTS_PER_FILE - 1}`);
    expect(() => allocate(join(REPO, "test", "helpers", "project.ts"))).toThrow(
      "test addresses: test/helpers/project.ts is no test file (test/**/*.test.ts); pass __filename",
    );
  });

  it("holds what is fixed by design in <run>.0, which is no file's", () => {
    expect(recordedSite(4, 2870).net.endsWith(".0")).toBe(true);
    expect(all.some((a) => a.net === recordedSite(4, 2870).net)).toBe(false);
  });
});

describe("the test files", () => {
  it("write no address and no port by hand where a server binds", () => {
    expect(CHECKED.length).toBeGreaterThan(50);
    expect(CHECKED).toContain("test/site-nccl.test.ts");
    const found = CHECKED.flatMap((f) => byHand(text(f)).map((h) => `${f}:${h}`));
    expect(found).toEqual([]);
  });

  it("each ask the allocator as themselves, and only the state-upgrade test uses the recorded addresses", () => {
    const texts = testFiles(REPO)
      .filter((f) => f !== SELF)
      .map((f) => [f, text(f)] as const);
    const asOther = texts.filter(([, t]) => /\ballocate\((?!__filename\))/.test(t)).map(([f]) => f);
    expect(asOther).toEqual([]);
    expect(texts.filter(([, t]) => t.includes("allocate(__filename)")).length).toBeGreaterThan(50);
    const recorded = texts.filter(([, t]) => /\brecordedSite\(/.test(t)).map(([f]) => f);
    expect(recorded).toEqual(["test/e2e/state-upgrade.test.ts"]);
  });

  it("the check finds each way of writing them by hand", () => {
    const old = [
      "    site = await startSite({ dir, nodes: ['s1'], firstIp: 176, sshPort: 2475 });",
      '    t = await teamProject("team", 243, 2643, 5561);',
      '  s = await servedSite("clistatus", 150, 2350);',
      '    expect(noIp).toContain("not this node\'s address (127.0.0.202)");',
      '      nodeEnv: (n) => (n.name === "s1" ? { BIND: "127.0.0.1", PORT: "18488" } : {}),',
      '    const env = { ...base, MASTER_PORT: "29611" };',
      '    expect((await get("http://127.0.0.1:18557/v1/models"))?.status).toBe(401);',
      "    const url = `http://127\\\\.0\\\\.0\\\\.1:18491/v1/models`;",
      "      `docker run -d --name rogue --network host vllm/vllm-openai:latest Q/q --port 18498`,",
      "    server.listen(5432, host);",
    ];
    expect(old.map((l) => byHand(l).length)).toEqual(old.map(() => 1));
    const allowed = [
      "    site = await startSite({ dir, nodes: ['s1'], ...AT.site(1) });",
      '      nodeEnv: (n) => (n.name === "s1" ? { BIND: "127.0.0.1", PORT: String(AT.port(0)) } : {}),',
      "    expect(run1).toContain(`--host ${n2.ip} --port 30000 --nnodes 2`);",
      "    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));",
    ];
    expect(allowed.flatMap(byHand)).toEqual([]);
  });
});
